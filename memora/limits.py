"""Length limits of memories, queries, tool arguments, profile fields and previews.

One definition each, so a tool's schema, the policy gate and the offline
model's argument clipping can never disagree about what fits. This module
imports nothing, so the offline chat model can use it and stay a plain chat
model.
"""

from __future__ import annotations

MAX_MEMORY_CHARS = 500
"""Longest content accepted as one memory, by the policy and by the remember tool."""

MAX_QUERY_CHARS = 500
"""Longest memory search query the agent may send."""

MAX_REASON_CHARS = 300
"""Longest reason the agent may give for forgetting a memory."""

MAX_MEMORY_ID_CHARS = 128
"""Longest memory id the agent may name."""

MAX_PROFILE_KEY_CHARS = 64
"""Longest profile field name."""

MAX_PROFILE_VALUE_CHARS = 500
"""Longest profile field value."""

PREVIEW_CHARS = 120
"""Characters of a memory shown before a person or the agent confirms forgetting it."""

MAX_RESULT_CONTENT_CHARS = 500
"""Characters of one memory a search result shows the model (longer ones are cut)."""

MAX_RESULT_TOTAL_CHARS = 2500
"""Characters of memory content one search result holds in all, as the model reads it (quoted:
frames and datamarks included): about 700 tokens, well inside the context reserved for one
agent step (MEMORA_TOOL_STEP_TOKEN_RESERVE, 1600 by default)."""

MAX_USER_ID_CHARS = 256
"""Longest user id; a user id is 1..this many printable characters."""

MAX_THREAD_ID_CHARS = 256
"""Longest conversation thread id; a thread id is 1..this many printable characters."""

MAX_USER_MESSAGE_CHARS = 100_000
"""Longest user message a memory may name as its source (the policy scans all of it)."""

MAX_TOOL_ARGUMENTS_CHARS = 65_536
"""Longest raw argument string of one tool call; longer ones are refused unparsed."""

MAX_IMPORT_LINE_CHARS = 65_536
"""Longest line of a memory import; an exported memory is far shorter."""
