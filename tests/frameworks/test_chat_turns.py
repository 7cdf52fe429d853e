"""The OpenRLHF agent's turns in the policy's own markup (issue 35 §3), checked against the chat
templates themselves: for each family, the transcript the agent builds by concatenation (what
OpenRLHF tokenizes) must equal what the policy's template renders for the same conversation."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from tiny_policies import END_OF_TURN, GEMMA_TEMPLATE, gemma_processor, qwen_processor, qwen_tokenizer

from browser_env.chat_turns import ChatTurns
from browser_env.episode_runner import TOOL_SCHEMAS

POLICIES = {"qwen-text": (qwen_tokenizer, "qwen"), "qwen-vl": (qwen_processor, "qwen"),
            "gemma-vl": (gemma_processor, "gemma")}


@pytest.fixture(scope="module", params=sorted(POLICIES))
def policy(request):
    build, family = POLICIES[request.param]
    return build(), family


def _content(turns: ChatTurns, text: str, images: int) -> object:
    return [*({"type": "image"} for _ in range(images)), {"type": "text", "text": text}] if turns.sees_images else text


def test_a_tool_turn_continues_the_transcript_as_the_template_renders_it(policy):
    renderer, family = policy
    turns = ChatTurns(renderer, TOOL_SCHEMAS)
    call = '<tool_call>\n{"name": "goto", "arguments": {"url": "/library/"}}\n</tool_call>'
    first = turns.first_prompt("Find the opening hours.", "\n\nThe browser shows:\nLibrary")
    n = 1 if turns.sees_images else 0
    built = first + call + END_OF_TURN[family] + turns.tool_turn("goto", "Opening hours: 10:00", n)
    # the same conversation rendered by the template: a tool turn, or a user turn where it has none
    user = {"role": "user", "content": _content(turns, "Find the opening hours.\n\nThe browser shows:\nLibrary"
                                                + ("" if turns.renders_tools else turns.tools_text()), 0)}
    result = ({"role": "tool", "content": _content(turns, "Opening hours: 10:00", n)} if family == "qwen" else
              {"role": "user", "content": _content(turns, "Result of goto:\nOpening hours: 10:00", n)})
    kwargs = {"tools": TOOL_SCHEMAS} if turns.renders_tools else {}
    expected = renderer.apply_chat_template([user, {"role": "assistant", "content": call}, result], tokenize=False,
                                            add_generation_prompt=True, **kwargs)
    assert built == expected
    assert built.count(END_OF_TURN[family]) == 3 + (family == "qwen")  # system turn too in ChatML


def test_a_prompt_the_dataset_rendered_gets_the_page_and_the_tools_inside_its_user_turn(policy):
    renderer, _family = policy
    turns = ChatTurns(renderer, TOOL_SCHEMAS)
    rendered = renderer.apply_chat_template([{"role": "user", "content": _content(turns, "Find X", 0)}],
                                            tokenize=False, add_generation_prompt=True)
    out = turns.first_prompt(rendered, "\n\nPAGE")
    head, tail = out.split("Find X", 1)
    assert rendered.startswith(head) and "PAGE" in tail and '"name": "goto"' in tail
    assert out.endswith(rendered.split("Find X", 1)[1])  # the user turn's end and the assistant opening


def test_a_template_that_writes_nothing_for_images_gets_the_processors_image_token():
    processor = gemma_processor()
    processor.chat_template = GEMMA_TEMPLATE.replace("{{ '<start_of_image>' }}", "")
    turns = ChatTurns(processor, TOOL_SCHEMAS)
    feedback = turns.tool_turn("scroll", "PAGE", 2)
    assert feedback.count(processor.boi_token) == 2 and feedback.index(processor.boi_token) < feedback.index("PAGE")


def test_a_text_policy_gets_no_image_placeholder():
    turns = ChatTurns(qwen_tokenizer(), TOOL_SCHEMAS)
    assert not turns.sees_images
    assert "<|image_pad|>" not in turns.tool_turn("goto", "PAGE", 3)
