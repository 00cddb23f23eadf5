"""gamerig.daemon: the gamerigd supervisor, gamerigctl and its commands, config loading."""
