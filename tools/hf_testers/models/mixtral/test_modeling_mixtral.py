# torch_tpu's tester for Mixtral in the style of transformers 5.x (a CausalLMModelTester subclass, as
# the llama tester in ../shared/hf-tests): run by tools/hf_suite.py --extra tools/hf_testers.
import unittest

from transformers import is_torch_available
from transformers.testing_utils import require_torch

from ...causal_lm_tester import CausalLMModelTest, CausalLMModelTester

if is_torch_available():
    from transformers import (
        MixtralConfig,
        MixtralForCausalLM,
        MixtralForQuestionAnswering,
        MixtralForSequenceClassification,
        MixtralForTokenClassification,
        MixtralModel,
    )
    from transformers.models.mixtral.modeling_mixtral import MixtralRotaryEmbedding


class MixtralModelTester(CausalLMModelTester):
    def __init__(self, parent, **kwargs):
        # CPU's grouped_mm (the experts' default) needs strides that are multiples of 16 bytes:
        # the tester's default intermediate size (37) would fail every test on CPU.
        kwargs.setdefault("intermediate_size", 32)
        super().__init__(parent, **kwargs)

    if is_torch_available():
        config_class = MixtralConfig
        base_model_class = MixtralModel
        causal_lm_class = MixtralForCausalLM
        sequence_classification_class = MixtralForSequenceClassification
        question_answering_class = MixtralForQuestionAnswering
        token_classification_class = MixtralForTokenClassification


@require_torch
class MixtralModelTest(CausalLMModelTest, unittest.TestCase):
    all_model_classes = (
        (
            MixtralModel,
            MixtralForCausalLM,
            MixtralForSequenceClassification,
            MixtralForQuestionAnswering,
            MixtralForTokenClassification,
        )
        if is_torch_available()
        else ()
    )
    pipeline_model_mapping = (
        {
            "feature-extraction": MixtralModel,
            "text-classification": MixtralForSequenceClassification,
            "text-generation": MixtralForCausalLM,
            "zero-shot": MixtralForSequenceClassification,
            "question-answering": MixtralForQuestionAnswering,
            "token-classification": MixtralForTokenClassification,
        }
        if is_torch_available()
        else {}
    )
    model_tester_class = MixtralModelTester
    rotary_embedding_layer = MixtralRotaryEmbedding if is_torch_available() else None
