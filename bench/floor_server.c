/* The least an HTTP/1.1 server can do on this machine, for bench/server_bench.py: read a
 * request's head, read Content-Length bytes of body into one buffer, answer "ok", and keep the
 * connection. No parsing beyond that, no checks: never expose it. One connection at a time. */
#define _GNU_SOURCE /* strcasestr */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define CAP (64 << 20)

static long content_length(const char *head) {
  const char *at = strcasestr(head, "\r\ncontent-length:");
  return at ? atol(at + 17) : 0;
}

static void serve(int client, char *buf) {
  static const char answer[] = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
  long have = 0;
  for (;;) {
    char *end;
    buf[have] = 0;
    while ((end = strstr(buf, "\r\n\r\n")) == NULL) {
      long n = read(client, buf + have, CAP - 1 - have);
      if (n <= 0) return;
      have += n;
      buf[have] = 0;
    }
    long head = end + 4 - buf, want = head + content_length(buf);
    if (want >= CAP) return;
    while (have < want) {
      long n = read(client, buf + have, CAP - 1 - have);
      if (n <= 0) return;
      have += n;
    }
    if (write(client, answer, sizeof answer - 1) < 0) return;
    memmove(buf, buf + want, have - want);
    have -= want;
  }
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_port = htons(atoi(argv[1]));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 16)) {
    perror("floor_server");
    return 1;
  }
  char *buf = malloc(CAP);
  for (;;) {
    int client = accept(listener, NULL, NULL);
    if (client < 0) continue;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    serve(client, buf);
    close(client);
  }
}
