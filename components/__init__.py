"""hyperpod-inference components: one ComponentResource per module, composed by :class:`HyperPodInference`."""

from .hyperpod_inference import HyperPodInference, HyperPodInferenceArgs

__all__ = ["HyperPodInference", "HyperPodInferenceArgs"]
