"""For the scripts that interrupt themselves: where their last interrupt
lands."""
import time


def let_late_interrupts_land(seconds):
    """An interrupt the handler deferred comes again 20 ms later: it lands
    here for *seconds*, not in what the script does next (its waits, the
    router's shutdown)."""
    for _ in range(int(seconds / 0.01)):
        try:
            time.sleep(0.01)
        except KeyboardInterrupt:
            pass
