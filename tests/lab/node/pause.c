/* The node lab's sandbox ("pause") process: PID 1 of every pod's sandbox, built statically from
 * this file so that no image is pulled from a registry. It holds the pod's namespaces open, reaps
 * the children that are reparented to it and exits 0 on SIGINT or SIGTERM. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL) || sigaction(SIGCHLD, &child, NULL))
    return 1;
  for (;;) pause();
}
