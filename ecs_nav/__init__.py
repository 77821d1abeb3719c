"""ecs_nav: game-AI navigation as an entity-component-system."""
