# torch_tpu's tester for Qwen3 in the style of transformers 5.x (a CausalLMModelTester subclass, as
# the llama tester in ../shared/hf-tests): run by tools/hf_suite.py --extra tools/hf_testers.
import unittest

from transformers import is_torch_available
from transformers.testing_utils import require_torch

from ...causal_lm_tester import CausalLMModelTest, CausalLMModelTester

if is_torch_available():
    from transformers import (
        Qwen3Config,
        Qwen3ForCausalLM,
        Qwen3ForQuestionAnswering,
        Qwen3ForSequenceClassification,
        Qwen3ForTokenClassification,
        Qwen3Model,
    )
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding


class Qwen3ModelTester(CausalLMModelTester):
    if is_torch_available():
        config_class = Qwen3Config
        base_model_class = Qwen3Model
        causal_lm_class = Qwen3ForCausalLM
        sequence_classification_class = Qwen3ForSequenceClassification
        question_answering_class = Qwen3ForQuestionAnswering
        token_classification_class = Qwen3ForTokenClassification


@require_torch
class Qwen3ModelTest(CausalLMModelTest, unittest.TestCase):
    all_model_classes = (
        (
            Qwen3Model,
            Qwen3ForCausalLM,
            Qwen3ForSequenceClassification,
            Qwen3ForQuestionAnswering,
            Qwen3ForTokenClassification,
        )
        if is_torch_available()
        else ()
    )
    pipeline_model_mapping = (
        {
            "feature-extraction": Qwen3Model,
            "text-classification": Qwen3ForSequenceClassification,
            "text-generation": Qwen3ForCausalLM,
            "zero-shot": Qwen3ForSequenceClassification,
            "question-answering": Qwen3ForQuestionAnswering,
            "token-classification": Qwen3ForTokenClassification,
        }
        if is_torch_available()
        else {}
    )
    model_tester_class = Qwen3ModelTester
    rotary_embedding_layer = Qwen3RotaryEmbedding if is_torch_available() else None
