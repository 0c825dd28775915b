"""`memora demo`: the scenarios a memory agent must get right, played through the whole agent."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from agent.chat_models import describe_model
from cli.chat import print_memories, prompt_approval, run_turn
from cli.console import console
from graph.checkpointed import open_agent
from memora.api import Memora
from memora.config import get_settings

DEMO_SESSIONS: list[tuple[str, list[str]]] = [
    ("scenario 1: no memory needed", ["請解釋 present perfect。"]),
    (
        "scenario 2: recall a past weakness",
        [
            "請記住，我的弱點是經常混淆 present perfect 和 past simple。",
            "依照我以前提過的弱點，今天應該練什麼？",
        ],
    ),
    ("scenario 3: remember on request", ["請記住，我預計明年五月參加 IELTS。"]),
    ("scenario 4: sensitive data is refused", ["請記住，我的驗證碼是 123456。"]),
    ("scenario 5: forget needs approval", ["不要再記得我以前想準備 IELTS。"]),
    (
        "scenario 6, session 1: preferences and project",
        [
            "I prefer concise answers with code examples.",
            "I'm working on a project called Atlas, a LangGraph agent for travel planning.",
        ],
    ),
    (
        "scenario 6, session 2 (new thread): recall across sessions",
        [
            "What do you know about my project and my preferred style?",
        ],
    ),
]


def demo(
    yes: Annotated[bool, typer.Option("--yes", help="Approve deletions.")] = False,
    no: Annotated[bool, typer.Option("--no", help="Refuse deletions.")] = False,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep the demo store here (default: temp).")
    ] = None,
) -> None:
    """Run the scenarios offline, printing the agent trace and the memory table."""
    with tempfile.TemporaryDirectory(prefix="memora-demo-") as tmp:
        root = data_dir or Path(tmp)
        settings = get_settings().model_copy(update={"data_dir": root})
        memora = Memora(settings)
        console.print(f"Model: {describe_model(settings)}; data dir: {root}", markup=False)

        def ask(request: dict[str, Any]) -> Any:
            if yes or no:
                answer = "y" if yes else "n"
                console.print(f"Delete this memory? [y/N]: {answer}", markup=False)
                return answer
            return prompt_approval(request) or "n"  # a closed terminal keeps the memory

        user = "demo"
        with open_agent(root) as agent:
            for title, messages in DEMO_SESSIONS:
                thread_id = uuid.uuid4().hex
                console.rule(title)
                for text in messages:
                    console.print(f"[bold]You[/bold]: {escape(text)}")
                    run_turn(agent, thread_id, user, text, ask, memora=memora, verbose=True)
        print_memories(memora, user)
        memora.close()
