"""The memory inspector: a small web app at ``/ui`` for a person to see and steer their memory.

``graph.inspector.app`` is the ASGI app (``langgraph.json`` → ``http.app``, and ``memora ui``);
``service`` reads and changes the library; ``threads`` finds and answers paused deletions.
"""
