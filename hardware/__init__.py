"""gamerig.hardware: device drivers and the simulated target machine (arriving with the hardware issue)."""
