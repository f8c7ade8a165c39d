/* The relay of bench/gateway_bench.py without Python, for its "relay (C)" figures: what a
 * gateway whose request path is compiled code (no interpreter, no ASGI server) could not avoid
 * on this machine. Same contract as the bench's Python relay (`serve_relay`): a POST to /load
 * with an `x-bench-body: NAME` header loads the engine request the bench wrote to DIR/NAME
 * (answered 204); any other request is read in full (head and Content-Length body), then the
 * loaded request named by its own header is sent to the engine (POST /v1/completions on a
 * connection kept per client connection), and the engine's answer is passed back byte for
 * byte as it arrives (its head too), until its Content-Length or its last chunk.
 *
 *     relay_floor PORT ENGINE_PORT DIR
 *
 * A thread per client connection. No checks beyond what the bench needs: never expose it. */
#define _GNU_SOURCE /* strcasestr */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define CAP (64 << 20)
#define NAMES 256

static int engine_port;
static const char *folder;

/* The loaded engine requests, by name (the bench loads each once before timing it). */
static struct {
  char name[128];
  char *data;
  long size;
} loaded[NAMES];
static int count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static long header_number(const char *head, const char *name) {
  const char *at = strcasestr(head, name);
  return at ? atol(at + strlen(name)) : -1;
}

/* The value of the x-bench-body header, copied into `out`. */
static void bench_name(const char *head, char *out, size_t size) {
  out[0] = 0;
  const char *at = strcasestr(head, "\r\nx-bench-body:");
  if (!at) return;
  at += 15;
  while (*at == ' ') at++;
  size_t n = strcspn(at, "\r\n");
  if (n >= size) n = size - 1;
  memcpy(out, at, n);
  out[n] = 0;
}

static int load(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", folder, name);
  FILE *file = fopen(path, "rb");
  if (!file) return -1;
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *data = malloc(size > 0 ? size : 1);
  if (fread(data, 1, size, file) != (size_t)size) size = 0;
  fclose(file);
  pthread_mutex_lock(&lock);
  int found = -1;
  for (int i = 0; i < count; i++)
    if (strcmp(loaded[i].name, name) == 0) found = i;
  if (found < 0 && count < NAMES) found = count++;
  if (found >= 0) {
    free(loaded[found].data);
    snprintf(loaded[found].name, sizeof loaded[found].name, "%s", name);
    loaded[found].data = data, loaded[found].size = size;
  }
  pthread_mutex_unlock(&lock);
  return found;
}

static int find(const char *name) {
  pthread_mutex_lock(&lock);
  int found = -1;
  for (int i = 0; i < count; i++)
    if (strcmp(loaded[i].name, name) == 0) found = i;
  pthread_mutex_unlock(&lock);
  return found;
}

static int write_all(int fd, const char *data, long size) {
  while (size > 0) {
    long n = write(fd, data, size);
    if (n <= 0) return -1;
    data += n, size -= n;
  }
  return 0;
}

static int connect_engine(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_port = htons(engine_port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&address, sizeof address)) {
    close(fd);
    return -1;
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* Where a chunked body stands, fed the bytes as they come. */
struct chunks {
  int state; /* 0 size line, 1 data, 2 the data's CRLF, 3 the last CRLF, 4 done */
  long left;
  int digits_done;
};

static void feed(struct chunks *c, const char *p, long n) {
  for (long i = 0; i < n && c->state != 4;) {
    char ch = p[i];
    if (c->state == 0) {
      if (ch == '\n') {
        c->state = c->left ? 1 : 3;
        c->digits_done = 0;
      } else if (ch == ';' || ch == '\r') {
        c->digits_done = 1;
      } else if (!c->digits_done) {
        int v = ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10;
        c->left = c->left * 16 + v;
      }
      i++;
    } else if (c->state == 1) {
      long take = n - i < c->left ? n - i : c->left;
      c->left -= take, i += take;
      if (c->left == 0) c->state = 2;
    } else if (c->state == 2) {
      if (ch == '\n') c->state = 0;
      i++;
    } else { /* the blank line after the last chunk (no trailers) */
      if (ch == '\n') c->state = 4;
      i++;
    }
  }
}

/* Send the loaded request to the engine and pass its answer back to `client`. */
static int relay(int client, int *engine, int which, char *buf) {
  char head[256];
  int size = snprintf(head, sizeof head,
                      "POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: "
                      "application/json\r\ncontent-length: %ld\r\n\r\n",
                      loaded[which].size);
  if (*engine < 0 && (*engine = connect_engine()) < 0) return -1;
  if (write_all(*engine, head, size) || write_all(*engine, loaded[which].data, loaded[which].size))
    return -1;
  long have = 0, got = 0, length = -1;
  int in_body = 0;
  struct chunks chunks = {0};
  for (;;) {
    long n = read(*engine, buf + have, CAP - 1 - have);
    if (n <= 0) return -1;
    if (write_all(client, buf + have, n)) return -1; /* passed on as it comes */
    if (in_body) { /* the body is not kept: only its framing is followed */
      got += n;
      if (length < 0) feed(&chunks, buf, n);
    } else {
      have += n;
      buf[have] = 0;
      char *end = strstr(buf, "\r\n\r\n");
      if (!end) continue;
      long body_at = end + 4 - buf;
      length = header_number(buf, "\r\ncontent-length:");
      got = have - body_at;
      if (length < 0) feed(&chunks, buf + body_at, got);
      in_body = 1, have = 0;
    }
    if (length >= 0 ? got >= length : chunks.state == 4) return 0;
  }
}

static void *serve(void *arg) {
  int client = (int)(long)arg, engine = -1;
  char *buf = malloc(CAP), *answer = malloc(CAP), name[128];
  static const char no_content[] = "HTTP/1.1 204 No Content\r\n\r\n";
  static const char missing[] = "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
  long have = 0;
  for (;;) {
    char *end;
    buf[have] = 0;
    while ((end = strstr(buf, "\r\n\r\n")) == NULL) {
      long n = read(client, buf + have, CAP - 1 - have);
      if (n <= 0) goto done;
      have += n;
      buf[have] = 0;
    }
    long head = end + 4 - buf, length = header_number(buf, "\r\ncontent-length:");
    long want = head + (length > 0 ? length : 0);
    if (want >= CAP) goto done;
    while (have < want) {
      long n = read(client, buf + have, CAP - 1 - have);
      if (n <= 0) goto done;
      have += n;
    }
    bench_name(buf, name, sizeof name);
    if (strncmp(buf, "POST /load ", 11) == 0) {
      int ok = load(name) >= 0;
      if (write_all(client, ok ? no_content : missing, ok ? sizeof no_content - 1 : sizeof missing - 1))
        goto done;
    } else {
      int which = find(name);
      if (which < 0) {
        if (write_all(client, missing, sizeof missing - 1)) goto done;
      } else if (relay(client, &engine, which, answer)) {
        goto done;
      }
    }
    memmove(buf, buf + want, have - want);
    have -= want;
  }
done:
  close(client);
  if (engine >= 0) close(engine);
  free(buf);
  free(answer);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  engine_port = atoi(argv[2]);
  folder = argv[3];
  int listener = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_port = htons(atoi(argv[1]));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 128)) {
    perror("relay_floor");
    return 1;
  }
  for (;;) {
    int client = accept(listener, NULL, NULL);
    if (client < 0) continue;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    pthread_t thread;
    if (pthread_create(&thread, NULL, serve, (void *)(long)client)) {
      close(client);
      continue;
    }
    pthread_detach(thread);
  }
}
