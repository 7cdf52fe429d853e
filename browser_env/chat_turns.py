"""The turns an agent adds to a running transcript, in the policy's own markup.

An agent harness that works on text (OpenRLHF's `MultiTurnAgentExecutor` concatenates strings and
tokenizes them with the policy's tokenizer or processor) must write the tool turns and image
placeholders the way the policy's chat template would have. Hard-coding one family's markup (ChatML
`<|im_start|>`, Qwen's `<|vision_start|><|image_pad|><|vision_end|>`) gives every other family
wrong prompts and images whose placeholders its processor cannot find. So everything here is
rendered with the policy's own `apply_chat_template` and checked against its processor:

- the first prompt is the user turn (instruction and start page) with the tools, rendered by the
  template (a prompt the dataset already rendered gets the page text inserted before the user
  turn's end instead);
- a tool turn is the difference between the conversation rendered with and without it, after the
  assistant turn the policy just generated. The policy's own end-of-turn token is left out (the
  engine already returned it as the last generated token); what the template writes after it
  (ChatML's newline) is kept;
- a template with no `tool` role (Gemma 3's raises on one) gets the result as a user turn, and a
  template that renders no tools gets them described in the first user turn, with the Hermes call
  format the agent parses;
- an image is whatever the template writes for an `{"type": "image"}` part (the processor then
  expands it); a template that writes nothing for images gets the processor's image token.
"""
from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger(__name__)

_MARK = "CUAMARKq7z"  # stands for content whose markup is being measured
_ANSWER = "CUAANSq7z"


class ChatTurns:
    """Turn markup for one policy (a tokenizer, or a processor for a VLM), with the agent's tools."""

    def __init__(self, renderer: Any, tools: list[dict[str, Any]]) -> None:
        self.renderer = renderer
        self.tools = tools
        self.sees_images = getattr(renderer, "image_processor", None) is not None
        tok = getattr(renderer, "tokenizer", renderer)
        self._special = sorted({str(t) for t in getattr(tok, "all_special_tokens", [])}
                               | set(getattr(tok, "get_added_vocab", dict)()), key=len, reverse=True)
        bare = self._render([self._user(_MARK)], gen=True)
        self._user_end = bare[bare.index(_MARK) + len(_MARK):]  # e.g. "<|im_end|>\n<|im_start|>assistant\n"
        self.renders_tools = self._render([self._user(_MARK)], gen=True, tools=tools) != bare
        self._image = self._image_placeholder()

    # ---- rendering ---------------------------------------------------------------------------
    def _render(self, messages: list[dict[str, Any]], *, gen: bool, tools: list[dict] | None = None) -> str:
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": gen}
        if tools:
            kwargs["tools"] = tools
        out = self.renderer.apply_chat_template(messages, **kwargs)
        return out if isinstance(out, str) else out[0]

    def _user(self, text: str, n_images: int = 0, role: str = "user") -> dict[str, Any]:
        if not self.sees_images:  # text templates may expect string content
            return {"role": role, "content": text}
        return {"role": role, "content": [*({"type": "image"} for _ in range(n_images)), {"type": "text", "text": text}]}

    def _image_placeholder(self) -> str | None:
        """What the template writes for one image, or None when it writes nothing (see module doc)."""
        if not self.sees_images:
            return None
        with_image = self._render([self._user(_MARK, 1)], gen=False)
        return None if with_image == self._render([self._user(_MARK, 0)], gen=False) else ""

    def _processor_image_token(self) -> str:
        proc = self.renderer
        return str(getattr(proc, "boi_token", None) or getattr(proc, "image_token", None) or "<image>")

    def _end_token(self, closing: str) -> str:
        """The special token at the start of what the template writes after an assistant turn."""
        return next((t for t in self._special if t and closing.startswith(t)), "")

    # ---- the turns ---------------------------------------------------------------------------
    def tools_text(self) -> str:
        """The tools and the call format, for a template that does not render tools."""
        lines = "\n".join(json.dumps(t["function"]) for t in self.tools)
        return ("\n\nYou can use these tools, one call per turn, written as "
                '<tool_call>{"name": <tool name>, "arguments": {<arguments>}}</tool_call>:\n'
                f"{lines}\nReply without a tool call (or call answer) to give your final answer.")

    def first_prompt(self, prompt: str, page: str) -> str:
        """The episode's first prompt: the instruction (raw, or already rendered) and the start page."""
        if self._user_end and prompt.endswith(self._user_end):  # the dataset applied the chat template
            missing = "" if f'"name": "{self.tools[0]["function"]["name"]}"' in prompt else self.tools_text()
            return prompt[: -len(self._user_end)] + page + missing + self._user_end
        if self.renders_tools:
            return self._render([self._user(prompt + page)], gen=True, tools=self.tools)
        return self._render([self._user(prompt + page + self.tools_text())], gen=True)

    def tool_turn(self, name: str, text: str, n_images: int) -> str:
        """What follows the policy's end-of-turn token: the tool's result (with `n_images`
        placeholders) and the next assistant turn's opening."""
        n_images = n_images if self.sees_images else 0
        if n_images and self._image is None:  # the template ignores images: the processor's token
            text = self._processor_image_token() * n_images + text
            n_images = 0
        base = [self._user(_MARK), {"role": "assistant", "content": _ANSWER}]
        before = self._render(base, gen=False)
        closing = before[before.index(_ANSWER) + len(_ANSWER):]
        for turn in ({**self._user(text, n_images, role="tool"), "name": name},
                     self._user(f"Result of {name}:\n{text}", n_images)):
            try:
                after = self._render([*base, turn], gen=True)
            except Exception as exc:  # noqa: BLE001 - a template without a tool role raises (Gemma 3's does)
                log.debug("the chat template refused a %s turn (%s): trying the next form", turn["role"], exc)
                continue
            rest = after[after.index(_ANSWER) + len(_ANSWER):]
            if rest.startswith(closing) and text.strip()[:40] in rest:
                return closing[len(self._end_token(closing)):] + rest[len(closing):]
        raise ValueError("the policy's chat template renders neither a tool turn nor a user turn after an "
                         "assistant turn")
