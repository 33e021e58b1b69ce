/* The pod sandbox ("pause") container of the real test node: PID 1 of every pod, holding its
 * namespaces. It sleeps until SIGTERM or SIGINT and reaps the zombies a shared PID namespace
 * would leave it. Built static by scripts/real-cluster/images.sh with the system C compiler. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }
static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {}
}

int main(void) {
  struct sigaction on_stop = {0}, on_child = {0};
  on_stop.sa_handler = stop;
  on_child.sa_handler = reap;
  on_child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigaction(SIGTERM, &on_stop, 0);
  sigaction(SIGINT, &on_stop, 0);
  sigaction(SIGCHLD, &on_child, 0);
  for (;;) pause();
}
