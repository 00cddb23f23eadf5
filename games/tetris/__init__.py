"""Standard Tetris: rules, engine, placements, compiled search kernels, players, headless play, tuning."""
