"""Graph nodes: one small function a file, plus the state and context they share."""
