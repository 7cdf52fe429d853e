"""Tiny policy tokenizers and processors of two families, built here from local pieces (no hub).

The agents must render their turns with the policy's own chat template and processor, so the
framework tests run them against two families whose markup differs in every place that matters:

- `qwen`: ChatML turns, Hermes tools in the system turn, tool results as `<tool_response>` inside
  a user turn (as Qwen2.5/3-VL render them), images as `<|vision_start|><|image_pad|><|vision_end|>`
  expanded by a real `Qwen2VLProcessor` (PIL image processor);
- `gemma`: Gemma 3 turns (`<start_of_turn>user` ... `<end_of_turn>`, the assistant is `model`),
  no tool support, strict user/model alternation (the template raises on a `tool` turn, as
  Gemma 3's does), images as `<start_of_image>` expanded by a real `Gemma3Processor`.

The templates follow the published ones in the parts an agent touches; the tokenizers are small
BPEs with the family's special tokens. Runs in .venv-verl and .venv-openrlhf (transformers 5.x).
"""
from __future__ import annotations

from typing import Any

_QWEN_CONTENT = (
    "{%- if message.content is string %}{{- message.content }}{%- else %}{%- for part in message.content %}"
    "{%- if part.type == 'image' %}{{- '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif part.type == 'text' %}{{- part.text }}{%- endif %}{%- endfor %}{%- endif %}"
)
QWEN_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\nYou are a helpful assistant.\\n\\n# Tools\\n\\nYou may call one or "
    "more functions to assist with the user query.\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0].role != 'system' %}{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}" + _QWEN_CONTENT + "{{- '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' }}" + _QWEN_CONTENT +
    "{%- for call in message.tool_calls or [] %}{{- '\\n<tool_call>\\n{\"name\": \"' + call.function.name + "
    "'\", \"arguments\": ' }}{{- call.function.arguments | tojson }}{{- '}\\n</tool_call>' }}"
    "{%- endfor %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

GEMMA_TEMPLATE = (
    "{{ bos_token }}"
    "{%- for message in messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{%- if message['role'] == 'assistant' -%}{%- set role = 'model' -%}{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] | trim }}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>"]
GEMMA_SPECIAL = ["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                 "<end_of_image>", "<image_soft_token>"]
#: Which token ends an assistant turn in each family (what a vLLM engine stops on and returns).
END_OF_TURN = {"qwen": "<|im_end|>", "gemma": "<end_of_turn>"}
CORPUS = ("The browser shows the City Library page. Opening hours: Saturday 10:00 to 17:00. goto click "
          "scroll answer url direction down up text element submit name arguments tool_call function "
          "Riverside Branch opens at 10:00 on Saturdays. {\"name\": \"goto\", \"arguments\": {\"url\": "
          "\"/library/\"}} ") * 4


def _tokenizer(special: list[str], **named: str) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator([CORPUS], trainer=trainer)
    tok.add_special_tokens(special)
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token=None, model_max_length=32768, **named)


def qwen_tokenizer() -> Any:
    tok = _tokenizer(QWEN_SPECIAL, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = QWEN_TEMPLATE
    return tok


def gemma_tokenizer() -> Any:
    tok = _tokenizer(GEMMA_SPECIAL, eos_token="<eos>", pad_token="<pad>", bos_token="<bos>",
                     extra_special_tokens={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                           "image_token": "<image_soft_token>"})
    tok.chat_template = GEMMA_TEMPLATE
    return tok


def qwen_processor() -> Any:
    """A Qwen2-VL processor: 28x28-pixel merged patches, so a 448x280 thumbnail is 160 tokens."""
    from transformers import Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    from transformers.video_processing_utils import BaseVideoProcessor

    class NoVideo(BaseVideoProcessor):
        """Qwen2-VL's video processor needs torchvision (no CPU build here); no video is used."""

        merge_size = 2

    class TinyQwen2VLProcessor(Qwen2VLProcessor):
        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            # without torchvision, transformers' BaseVideoProcessor is a placeholder class
            return type(argument) if argument_name == "video_processor" else \
                super().check_argument_for_proper_class(argument_name, argument)

    return TinyQwen2VLProcessor(image_processor=Qwen2VLImageProcessorPil(), tokenizer=qwen_tokenizer(),
                            video_processor=NoVideo(), chat_template=QWEN_TEMPLATE)


def gemma_processor() -> Any:
    """A Gemma 3 processor: 4 soft tokens per image (the real one uses 256), 28 px inputs."""
    from transformers import Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    tok = gemma_tokenizer()
    return Gemma3Processor(image_processor=Gemma3ImageProcessorPil(size={"height": 28, "width": 28}),
                           tokenizer=tok, chat_template=GEMMA_TEMPLATE, image_seq_length=4)


FAMILIES = {"qwen": (qwen_tokenizer, qwen_processor), "gemma": (gemma_tokenizer, gemma_processor)}
