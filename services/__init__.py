"""gamerig.services: the camera, ai, relay and watchdog processes (arriving with the daemon issue)."""
