"""reward/README.md's screenshot tools return content parts, which is what TRL keeps (any other
return value becomes its string) and what the reward adapters read as screenshots."""
from __future__ import annotations

import re
from pathlib import Path

from PIL import Image

from verifier.loaders.rollouts import from_conversation
from verifier.trajectory import Task

README = Path(__file__).resolve().parents[2] / "reward" / "README.md"


class FakeBrowser:
    def __init__(self) -> None:
        self.clicks: list[tuple[int, int]] = []

    def screenshot(self) -> Image.Image:
        return Image.new("RGB", (32, 20), (len(self.clicks) * 60, 0, 0))

    def click(self, x: int, y: int) -> None:
        self.clicks.append((x, y))


def test_readme_screenshot_tools_return_image_parts():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    (tools,) = [b for b in blocks if "def screenshot(" in b]
    tools = tools.split("# what the reward receives")[0]
    namespace = {"browser": FakeBrowser()}
    exec(compile(tools, str(README), "exec"), namespace)  # noqa: S102 - our own README's example
    results = {"screenshot": namespace["screenshot"](), "click": namespace["click"](10, 20)}
    for name, result in results.items():
        # TRL 1.16 `_tool_call_loop`: `content = result if isinstance(result, list) else str(result)`
        assert isinstance(result, list), name
        assert any(p["type"] == "image" and isinstance(p["image"], Image.Image) for p in result), name
    completion = [
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": n, "arguments": {"x": 10, "y": 20} if n == "click" else {}}}]}
        for n in results] + [{"role": "tool", "name": n, "content": r} for n, r in results.items()]
    completion = [completion[0], completion[2], completion[1], completion[3]]
    traj = from_conversation(Task(id="t", instruction="x"), None, completion, {}, 0)
    assert [s.action for s in traj.steps] == ["screenshot", "click"]
    assert [s.step for s in traj.screenshots] == [1, 2]
