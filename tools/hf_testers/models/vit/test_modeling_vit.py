# torch_tpu's tester for ViT in the style of transformers 5.x (a minimal ModelTesterMixin tester, as
# the gpt2 and bert testers in ../shared/hf-tests): run by tools/hf_suite.py --extra tools/hf_testers.
import unittest

from transformers import ViTConfig, is_torch_available
from transformers.testing_utils import require_torch

from ...test_configuration_common import ConfigTester
from ...test_modeling_common import ModelTesterMixin, floats_tensor

if is_torch_available():
    from torch import nn
    from transformers import ViTForImageClassification, ViTForMaskedImageModeling, ViTModel


class ViTModelTester:
    def __init__(
        self,
        parent,
        batch_size=13,
        image_size=30,
        patch_size=2,
        num_channels=3,
        is_training=True,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        type_sequence_label_size=10,
        mask_ratio=0.5,
    ):
        self.parent = parent
        self.batch_size = batch_size
        self.image_size = image_size
        self.patch_size = patch_size
        self.num_channels = num_channels
        self.is_training = is_training
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.type_sequence_label_size = type_sequence_label_size
        # Patches plus the [CLS] token.
        self.seq_length = (image_size // patch_size) ** 2 + 1
        # Masked image modeling masks patches (not the [CLS] token): num_masks of mask_length.
        self.mask_length = self.seq_length - 1
        self.num_masks = int(mask_ratio * self.mask_length)

    def get_config(self):
        return ViTConfig(
            image_size=self.image_size,
            patch_size=self.patch_size,
            num_channels=self.num_channels,
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act="gelu",
            hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1,
            initializer_range=0.02,
            encoder_stride=self.patch_size,
        )

    def prepare_config_and_inputs_for_common(self):
        pixel_values = floats_tensor(
            [self.batch_size, self.num_channels, self.image_size, self.image_size]
        )
        return self.get_config(), {"pixel_values": pixel_values}


@require_torch
class ViTModelTest(ModelTesterMixin, unittest.TestCase):
    all_model_classes = (
        (ViTModel, ViTForImageClassification, ViTForMaskedImageModeling)
        if is_torch_available()
        else ()
    )
    test_resize_embeddings = False

    def setUp(self):
        self.model_tester = ViTModelTester(self)
        self.config_tester = ConfigTester(
            self, config_class=ViTConfig, has_text_modality=False, hidden_size=37
        )

    def test_config(self):
        self.config_tester.run_common_tests()

    def test_model_get_set_embeddings(self):
        # ViT embeds patches with a convolution, not an nn.Embedding.
        config, _ = self.model_tester.prepare_config_and_inputs_for_common()
        for model_class in self.all_model_classes:
            model = model_class(config)
            self.assertIsInstance(model.get_input_embeddings(), nn.Module)
            output = model.get_output_embeddings()
            self.assertTrue(output is None or isinstance(output, nn.Linear))
