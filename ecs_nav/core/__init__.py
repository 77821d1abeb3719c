"""The runtime's core: the World (esper context, tick, events), the agent table, components, events and
the documented limits of every input."""
