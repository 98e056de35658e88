"""hyperpod-inference: one environment of LLM inference on SageMaker HyperPod.

Thin on purpose: load and validate the stack config (every problem is reported before any resource is
registered), build the top-level component, export what operators need.
"""

import pulumi

from components import HyperPodInference, HyperPodInferenceArgs
from components.config import GlobalStackConfig, load_program_config
from components.global_inference import GlobalInference, GlobalInferenceArgs

cfg = load_program_config()  # `hyperpod-inference:role: global` selects the global stack (docs/multi-region.md)
stack = (
    GlobalInference("global", GlobalInferenceArgs(cfg))
    if isinstance(cfg, GlobalStackConfig)
    else HyperPodInference("hyperpod-inference", HyperPodInferenceArgs(config=cfg))
)
for key, value in stack.exports.items():
    pulumi.export(key, value)
