# torch_tpu's tester for Whisper in the style of transformers 5.x (a minimal ModelTesterMixin tester,
# as the gpt2 and bert testers in ../shared/hf-tests): run by tools/hf_suite.py --extra tools/hf_testers.
import unittest

from transformers import WhisperConfig, is_torch_available
from transformers.testing_utils import require_torch

from ...test_configuration_common import ConfigTester
from ...test_modeling_common import ModelTesterMixin, floats_tensor, ids_tensor

if is_torch_available():
    import torch
    from transformers import WhisperForConditionalGeneration, WhisperModel


class WhisperModelTester:
    def __init__(
        self,
        parent,
        batch_size=3,
        is_training=True,
        vocab_size=200,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_mel_bins=80,
        max_source_positions=30,
        max_target_positions=40,
        decoder_seq_length=7,
    ):
        self.parent = parent
        self.batch_size = batch_size
        self.is_training = is_training
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_mel_bins = num_mel_bins
        self.max_source_positions = max_source_positions
        self.max_target_positions = max_target_positions
        # The encoder's two convolutions halve the input frames: 2 * max_source_positions in,
        # max_source_positions out.
        self.seq_length = 2 * max_source_positions
        self.encoder_seq_length = max_source_positions
        self.decoder_seq_length = decoder_seq_length
        self.pad_token_id = 0
        self.decoder_start_token_id = 85
        self.bos_token_id = 98
        self.eos_token_id = 98

    def get_config(self):
        return WhisperConfig(
            vocab_size=self.vocab_size,
            d_model=self.hidden_size,
            encoder_layers=self.num_hidden_layers,
            decoder_layers=self.num_hidden_layers,
            encoder_attention_heads=self.num_attention_heads,
            decoder_attention_heads=self.num_attention_heads,
            encoder_ffn_dim=self.hidden_size * 2,
            decoder_ffn_dim=self.hidden_size * 2,
            num_mel_bins=self.num_mel_bins,
            max_source_positions=self.max_source_positions,
            max_target_positions=self.max_target_positions,
            dropout=0.1,
            attention_dropout=0.1,
            pad_token_id=self.pad_token_id,
            bos_token_id=self.bos_token_id,
            eos_token_id=self.eos_token_id,
            decoder_start_token_id=self.decoder_start_token_id,
            suppress_tokens=None,
            begin_suppress_tokens=None,
        )

    def prepare_config_and_inputs_for_common(self):
        input_features = floats_tensor([self.batch_size, self.num_mel_bins, self.seq_length])
        decoder_input_ids = ids_tensor([self.batch_size, self.decoder_seq_length], self.vocab_size)
        decoder_input_ids[:, 0] = self.decoder_start_token_id
        decoder_attention_mask = torch.ones_like(decoder_input_ids)
        return self.get_config(), {
            "input_features": input_features,
            "decoder_input_ids": decoder_input_ids,
            "decoder_attention_mask": decoder_attention_mask,
        }


@require_torch
class WhisperModelTest(ModelTesterMixin, unittest.TestCase):
    all_model_classes = (
        (WhisperModel, WhisperForConditionalGeneration) if is_torch_available() else ()
    )
    is_encoder_decoder = True
    test_resize_embeddings = False

    def setUp(self):
        self.model_tester = WhisperModelTester(self)
        self.config_tester = ConfigTester(self, config_class=WhisperConfig, has_text_modality=False)

    def test_config(self):
        self.config_tester.run_common_tests()
