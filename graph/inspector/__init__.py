"""The memory inspector: a small web app at ``/ui`` for a person to see and steer their memory.

``graph.inspector.app`` builds the ASGI app (``server`` is the one ``langgraph.json`` → ``http.app``
serves; ``memora ui`` builds its own);
``service`` reads and changes the library; ``threads`` finds and answers paused deletions.
"""
