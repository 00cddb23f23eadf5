"""gamerig.games: pure game logic, no I/O; each game in its own package."""
