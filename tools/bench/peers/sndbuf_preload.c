// LD_PRELOAD shim for the peer benchmarks: every TCP socket a process creates gets
// SO_SNDBUF = $PRELOAD_SNDBUF_BYTES bytes (e.g. 65536), as UCX_TCP_SNDBUF does for Tessera's ranks.
// It lets cluster.sh compare gloo with the same socket setting (gloo has no option for it).
// A socket that is not TCP over IPv4/IPv6, or an unset/invalid variable, is left alone.
// Build: cc -shared -fPIC -O2 -o sndbuf_preload.so sndbuf_preload.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

typedef int (*socket_fn)(int, int, int);

static int wanted_sndbuf(void) {
  const char* v = getenv("PRELOAD_SNDBUF_BYTES");
  if (v == NULL || *v == '\0') return 0;
  char* end = NULL;
  long n = strtol(v, &end, 10);
  if (*end != '\0' || n < 4096 || n > (1L << 30)) return 0;
  return (int)n;
}

int socket(int domain, int type, int protocol) {
  static socket_fn real = NULL;
  if (real == NULL) real = (socket_fn)dlsym(RTLD_NEXT, "socket");
  int fd = real(domain, type, protocol);
  int bytes = wanted_sndbuf();
  int base_type = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0 && bytes > 0 && (domain == AF_INET || domain == AF_INET6) &&
      base_type == SOCK_STREAM && (protocol == 0 || protocol == IPPROTO_TCP)) {
    // Set before connect/listen: the kernel then stops autotuning this socket's send buffer,
    // and sockets accepted from a listener inherit it.
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
  return fd;
}
