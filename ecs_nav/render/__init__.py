"""What the viewer shows: GL-free draw lists (vertex arrays), colours, labels, the side panel, and the
pyglet viewer itself (the only module here that imports pyglet, and only when a window or capture is asked for)."""
