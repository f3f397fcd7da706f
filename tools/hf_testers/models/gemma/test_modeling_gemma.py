# torch_tpu's tester for Gemma in the style of transformers 5.x (a CausalLMModelTester subclass, as
# the llama tester in ../shared/hf-tests): run by tools/hf_suite.py --extra tools/hf_testers.
import unittest

from transformers import is_torch_available
from transformers.testing_utils import require_torch

from ...causal_lm_tester import CausalLMModelTest, CausalLMModelTester

if is_torch_available():
    from transformers import (
        GemmaConfig,
        GemmaForCausalLM,
        GemmaForSequenceClassification,
        GemmaForTokenClassification,
        GemmaModel,
    )
    from transformers.models.gemma.modeling_gemma import GemmaRotaryEmbedding


class GemmaModelTester(CausalLMModelTester):
    if is_torch_available():
        config_class = GemmaConfig
        base_model_class = GemmaModel
        causal_lm_class = GemmaForCausalLM
        sequence_classification_class = GemmaForSequenceClassification
        token_classification_class = GemmaForTokenClassification


@require_torch
class GemmaModelTest(CausalLMModelTest, unittest.TestCase):
    all_model_classes = (
        (
            GemmaModel,
            GemmaForCausalLM,
            GemmaForSequenceClassification,
            GemmaForTokenClassification,
        )
        if is_torch_available()
        else ()
    )
    pipeline_model_mapping = (
        {
            "feature-extraction": GemmaModel,
            "text-classification": GemmaForSequenceClassification,
            "text-generation": GemmaForCausalLM,
            "zero-shot": GemmaForSequenceClassification,
            "token-classification": GemmaForTokenClassification,
        }
        if is_torch_available()
        else {}
    )
    model_tester_class = GemmaModelTester
    rotary_embedding_layer = GemmaRotaryEmbedding if is_torch_available() else None
