"""Key outputs: everything that presses the target machine's keys (relay boards, virtual keyboards)."""
