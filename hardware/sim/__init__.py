"""gamerig.hardware.sim: the simulated target machine and its synthetic camera."""
