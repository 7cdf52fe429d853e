"""The policy's side of the screenshots, without a browser or a VLM: the thumbnail it is shown, the
image parts of its first turn, and the token budget the browser recipe prints at start (the
budget must count the images the policy really gets)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image
from suite_env import load_recipe

from browser_env.config import DEFAULT_POLICY_MAX_SIDE
from browser_env.episode_runner import ThreadedEpisode, policy_max_side, with_page
from browser_env.observe import policy_image

REPO = Path(__file__).resolve().parents[2]


def _png(width: int, height: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def recipe():
    return load_recipe("grpo_browser.py", "grpo_browser_images")


@pytest.mark.parametrize(("size", "thumb"), [((1280, 800), (448, 280)), ((960, 600), (448, 280)),
                                             ((1366, 768), (448, 252)), ((800, 1280), (280, 448)),
                                             ((480, 320), (448, 299))])
def test_the_policy_gets_a_thumbnail_and_the_budget_counts_it(size, thumb, recipe):
    image = policy_image(_png(*size), DEFAULT_POLICY_MAX_SIDE)
    assert image.size == thumb
    # the budget printed at start charges exactly this image (Qwen2-VL: one token per 28x28 patch)
    assert recipe.image_tokens(*size, DEFAULT_POLICY_MAX_SIDE) == -(-thumb[0] // 28) * -(-thumb[1] // 28)


def test_small_screenshots_and_full_size_are_left_alone():
    assert policy_image(_png(300, 200), 448).size == (300, 200)
    assert policy_image(_png(1280, 800), None).size == (1280, 800)


def test_one_default_side_for_every_framework(monkeypatch, recipe):
    """TRL's recipe, verl's agent loop and OpenRLHF's agent show the policy the same thumbnails."""
    assert recipe.BrowserArguments().policy_max_side == DEFAULT_POLICY_MAX_SIDE == 448
    monkeypatch.delenv("CUA_POLICY_MAX_SIDE", raising=False)
    assert policy_max_side() == 448 and ThreadedEpisode()._config.policy_max_side == 448
    monkeypatch.setenv("CUA_POLICY_MAX_SIDE", "320")
    assert ThreadedEpisode(policy_max_side=policy_max_side())._config.policy_max_side == 320


def test_a_vlm_policy_sees_the_start_page_as_image_parts():
    thumb = policy_image(_png(1280, 800), 448)
    prompt = [{"role": "system", "content": "act"}, {"role": "user", "content": "Find the hours."}]
    vlm = with_page(prompt, [thumb], "URL: /library/", sees_images=True)
    assert vlm[-1]["content"] == [{"type": "text", "text": "Find the hours."}, {"type": "image", "image": thumb},
                                  {"type": "text", "text": "URL: /library/"}]
    assert vlm[-1]["content"][1]["image"].size == (448, 280)
    text = with_page(prompt, [thumb], "URL: /library/", sees_images=False)  # the judge still gets them
    assert [p["type"] for p in text[-1]["content"]] == ["text", "text"]
    assert prompt[-1]["content"] == "Find the hours." and vlm[0] == prompt[0]  # the dataset row is untouched


def test_the_budget_is_printed_at_start_and_warns_when_an_episode_does_not_fit(recipe, capsys):
    args = recipe.BrowserArguments(max_env_steps=15, viewport_width=1280, viewport_height=800)
    assert recipe.report_budget(args, 8192)["fits"]
    out, err = capsys.readouterr()
    line = json.loads(out.split("episode budget:", 1)[1])
    assert line["image_tokens_per_step"] == 160 and line["episode_tokens"] == 15 * 410 and not err
    full = recipe.BrowserArguments(max_env_steps=15, viewport_width=1280, viewport_height=800, policy_max_side=None)
    assert not recipe.report_budget(full, 8192)["fits"]
    assert "only 5 of 15 steps fit" in capsys.readouterr().err


def test_the_budget_matches_a_real_qwen2_vl_image_processor(recipe):
    """Qwen2-VL's default image processor needs torchvision (absent here); transformers 5 ships the
    same resizing on PIL (`Qwen2VLImageProcessorPil`), which is what counts the tokens below. The
    budget charges each thumbnail exactly what the processor makes of it, and never less than it
    for a full-size screenshot (the processor caps the pixels there; the budget does not)."""
    pil = pytest.importorskip("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl")
    processor = pil.Qwen2VLImageProcessorPil()

    def tokens(size):
        t, h, w = processor(images=[Image.new("RGB", size)], return_tensors="np")["image_grid_thw"][0]
        return int(t * h * w) // processor.merge_size ** 2

    for size in ((1280, 800), (1366, 768), (480, 320)):
        thumb = policy_image(_png(*size), DEFAULT_POLICY_MAX_SIDE).size
        assert recipe.image_tokens(*size, DEFAULT_POLICY_MAX_SIDE) == tokens(thumb), size
    assert recipe.image_tokens(1280, 800, None) >= tokens((1280, 800))
