/* memtap_bench_sink ENDPOINT: a consumer that takes the agent's batches and throws them away.
 *
 * For tests/bench/run_hot_path.sh: with no monitor listening, the agent keeps every record
 * (lossless up to MEMTAP_BUFFER_MB), so a benchmark making tens of millions of events a
 * second piles up gigabytes of fresh buffer memory, and the figure measures the kernel
 * handing out pages more than the hook. With this sink bound, the agent's sender drains,
 * converts, encodes and sends as it does to a monitor, and the drained chunks go back to
 * the hooks for reuse, as they do in a real run; nothing is analysed or written.
 *
 * Binds a ZeroMQ PULL socket at ENDPOINT (the agent's MEMTAP_ENDPOINT) and receives until
 * killed. On SIGTERM or SIGINT prints "sink: N messages, M MiB" to stderr.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <zmq.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ENDPOINT\n", argv[0]);
    return 2;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_signal; /* no SA_RESTART: the blocking receive returns EINTR */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  void* ctx = zmq_ctx_new();
  void* sock = zmq_socket(ctx, ZMQ_PULL);
  if (!ctx || !sock || zmq_bind(sock, argv[1]) != 0) {
    fprintf(stderr, "sink: cannot bind '%s': %s\n", argv[1], zmq_strerror(zmq_errno()));
    return 1;
  }
  /* The binding is in place: a script may start the agent now. */
  printf("ready\n");
  fflush(stdout);

  zmq_msg_t msg;
  zmq_msg_init(&msg);
  uint64_t messages = 0, bytes = 0;
  while (!stop) {
    int n = zmq_msg_recv(&msg, sock, 0);
    if (n < 0) continue; /* EINTR: the loop checks stop */
    messages++;
    bytes += (uint64_t)n;
  }
  zmq_msg_close(&msg);
  fprintf(stderr, "sink: %llu messages, %llu MiB\n", (unsigned long long)messages,
          (unsigned long long)(bytes >> 20));
  zmq_close(sock);
  zmq_ctx_term(ctx);
  return 0;
}
