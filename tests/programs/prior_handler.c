/* libmemtap_test_prior_handler.so: a SIGSEGV handler installed before the agent's. Preloaded
 * after the agent (LD_PRELOAD=agent:this), its constructor runs first, which is how a
 * program's library can have a handler in place when the agent starts.
 *
 * The handler writes "prior handler: SIGSEGV" to stderr, restores the default action and
 * returns, so that the fault happens again and ends the process.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void prior_handler(int sig, siginfo_t* info, void* context) {
  (void)info;
  (void)context;
  static const char text[] = "prior handler: SIGSEGV\n";
  ssize_t ignored = write(2, text, sizeof text - 1);
  (void)ignored;
  signal(sig, SIG_DFL);
}

__attribute__((constructor)) static void install_prior_handler(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = prior_handler;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
}
