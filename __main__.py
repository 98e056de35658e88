"""hyperpod-inference: one environment of LLM inference on SageMaker HyperPod.

Thin on purpose: load and validate the stack config (every problem is reported before any resource is
registered), build the top-level component, export what operators need.
"""

import pulumi

from components import HyperPodInference, HyperPodInferenceArgs
from components.config import load_stack_config

stack = HyperPodInference("hyperpod-inference", HyperPodInferenceArgs(config=load_stack_config()))
for key, value in stack.exports.items():
    pulumi.export(key, value)
