/* corral-netproxy — the in-VM defensive proxy (plain C: libc + proto, no GLib).
 *
 *   CORRAL_PROXY_TOKEN=... [CORRAL_PLACEHOLDERS=ph1,ph2] corral-netproxy --fd N [--listen PORT]
 *   corral-netproxy (--serial DEV | --fd N) [--listen PORT] [--state-dir DIR]
 *                   [--trust-bundle FILE] [--user NAME]
 *
 * Without CORRAL_PROXY_TOKEN the session comes from the host (NET-PROTOCOL.md "Sessions"): the
 * proxy asks for it with egress.hello, writes DIR/net.env (default /run/corral) for the guest
 * agent's commands and the session CA into the trust bundle (default
 * /etc/ssl/certs/ca-certificates.crt), then drops to --user. When the host announces a new
 * session (egress.reset) or goes away it exits, and the guest's init starts it again.
 *
 * Listens on 127.0.0.1:PORT only (0: any free port, printed as "listening on port N"). Each
 * client must present the session's proxy token as the password of Proxy-Authorization: Basic
 * (HTTP_PROXY=http://corral:TOKEN@127.0.0.1:PORT); credentials in the request must be the
 * session's placeholders. An accepted request is forwarded, minus Proxy-Authorization, as one
 * channel over the stream on fd N to the host egress proxy (NET-PROTOCOL.md), which decides
 * again: this proxy is defence in depth, never the boundary.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-unix.h"
#include "netmux.h"
#include "netsession.h"
#include "proto.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD (16 * 1024)
#define MAX_PENDING 32
#define HEAD_TIMEOUT_S 10
#define PLACEHOLDER_PREFIX "corral-ph-"
#define PLACEHOLDER_LEN 42

typedef struct {
        int fd;
        char buf[MAX_HEAD + 1];
        size_t len;
        time_t deadline;
} Pending;

static const char *token;
static char **placeholders;
static size_t n_placeholders;

/* Strict base64 (RFC 4648, padding required); returns the decoded length or -1. */
static ssize_t
b64_decode (const char *in, size_t len, unsigned char *out, size_t cap)
{
        static const char alphabet[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t o = 0;

        if (len % 4 != 0)
                return -1;
        for (size_t i = 0; i < len; i += 4) {
                unsigned v = 0;
                int pad = 0;

                for (int k = 0; k < 4; k++) {
                        const char *p = in[i + k] ? strchr (alphabet, in[i + k]) : NULL;

                        if (in[i + k] == '=' && i + 4 == len && k >= 2) {
                                pad++;
                                v <<= 6;
                                continue;
                        }
                        if (!p || pad)
                                return -1;
                        v = (v << 6) | (unsigned) (p - alphabet);
                }
                for (int k = 0; k < 3 - pad; k++) {
                        if (o == cap)
                                return -1;
                        out[o++] = (unsigned char) (v >> (16 - 8 * k));
                }
        }
        return (ssize_t) o;
}

static bool
equal_ct (const char *a, size_t alen, const char *b)
{
        size_t blen = strlen (b);
        unsigned char d = alen != blen;

        for (size_t i = 0; i < alen && i < blen; i++)
                d |= (unsigned char) (a[i] ^ b[i]);
        return d == 0;
}

static bool
is_placeholder (const char *s, size_t len)
{
        for (size_t i = 0; i < n_placeholders; i++)
                if (equal_ct (s, len, placeholders[i]))
                        return true;
        return false;
}

/* value of "Basic BASE64" decoded into out as "user:password"; NULL when not basic. */
static const char *
basic_password (const char *value, size_t len, char *out, size_t cap)
{
        ssize_t n;
        char *colon;

        if (len < 6 || strncasecmp (value, "Basic ", 6) != 0)
                return NULL;
        n = b64_decode (value + 6, len - 6, (unsigned char *) out, cap - 1);
        if (n < 0)
                return NULL;
        out[n] = '\0';
        if (memchr (out, '\0', (size_t) n) || !(colon = strchr (out, ':')))
                return NULL;
        return colon + 1;
}

typedef enum { CHECK_OK, CHECK_NO_TOKEN, CHECK_NOT_PLACEHOLDER } Check;

/* Every credential in the request must be one of the session's placeholders. */
static bool
credential_ok (const char *name, size_t nlen, const char *value, size_t vlen)
{
        char buf[1024];
        const char *ph = memmem (value, vlen, PLACEHOLDER_PREFIX, strlen (PLACEHOLDER_PREFIX));
        const char *pass, *sp;

        if (nlen == 13 && strncasecmp (name, "Authorization", 13) == 0) {
                if ((pass = basic_password (value, vlen, buf, sizeof buf)))
                        return is_placeholder (pass, strlen (pass));
                sp = memchr (value, ' ', vlen);
                return sp && is_placeholder (sp + 1, vlen - (size_t) (sp + 1 - value));
        }
        while (ph) {
                size_t left = vlen - (size_t) (ph - value);

                if (left < PLACEHOLDER_LEN || !is_placeholder (ph, PLACEHOLDER_LEN))
                        return false;
                ph = memmem (ph + 1, left - 1, PLACEHOLDER_PREFIX, strlen (PLACEHOLDER_PREFIX));
        }
        return true;
}

/* Checks the head and writes it, minus Proxy-Authorization, to out. */
static Check
check_head (const char *head, size_t len, char *out, size_t *out_len)
{
        const char *p = head, *end = head + len;
        bool authorized = false;
        char buf[1024];

        *out_len = 0;
        while (p < end) {
                const char *eol = memmem (p, (size_t) (end - p), "\r\n", 2);
                size_t llen = (size_t) (eol - p);
                const char *colon = p == head ? NULL : memchr (p, ':', llen);
                size_t nlen = colon ? (size_t) (colon - p) : 0;
                const char *v = colon ? colon + 1 : NULL;
                size_t vlen = 0;

                if (v) {
                        while (v < eol && (*v == ' ' || *v == '\t'))
                                v++;
                        vlen = (size_t) (eol - v);
                }
                if (v && nlen == 19 && strncasecmp (p, "Proxy-Authorization", 19) == 0) {
                        const char *pass = basic_password (v, vlen, buf, sizeof buf);

                        authorized = authorized || (pass && equal_ct (pass, strlen (pass), token));
                } else {
                        if (v && !credential_ok (p, nlen, v, vlen))
                                return CHECK_NOT_PLACEHOLDER;
                        memcpy (out + *out_len, p, llen + 2);
                        *out_len += llen + 2;
                }
                p = eol + 2;
        }
        return authorized ? CHECK_OK : CHECK_NO_TOKEN;
}

static void
refuse (int fd, Check why)
{
        static const char no_token[] =
                "blocked by sandbox: use the proxy from HTTP_PROXY / HTTPS_PROXY with its token; "
                "direct requests are refused\r\n";
        static const char not_ph[] =
                "blocked by sandbox: only this session's credential tokens (from the environment) "
                "may be sent; real secrets stay on the host\r\n";
        const char *body = why == CHECK_NO_TOKEN ? no_token : not_ph;
        char msg[1024];
        int n = snprintf (
                msg, sizeof msg,
                "HTTP/1.1 %s\r\n%sX-Corral-Blocked: %s\r\n"
                "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
                "Connection: close\r\n\r\n%s",
                why == CHECK_NO_TOKEN ? "407 Proxy Authentication Required" : "403 Forbidden",
                why == CHECK_NO_TOKEN ? "Proxy-Authenticate: Basic realm=\"corral\"\r\n" : "",
                why == CHECK_NO_TOKEN ? "proxy-token" : "not-a-placeholder", strlen (body), body);

        (void) !send (fd, msg, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        close (fd);
}

static void
pending_done (Pending **p, size_t *n, size_t i)
{
        free (p[i]);
        p[i] = p[--*n];
}

/* A complete head: refuse or hand over to a new channel. */
static void
forward (NetMux *m, Pending *c, size_t head_len)
{
        char *out = malloc (MAX_HEAD + 1);
        size_t out_len = 0;
        Check r = out ? check_head (c->buf, head_len, out, &out_len) : CHECK_NO_TOKEN;

        if (r != CHECK_OK) {
                refuse (c->fd, r);
        } else {
                /* bytes after the head (a body's start) follow it */
                memcpy (out + out_len, c->buf + head_len, c->len - head_len);
                if (netmux_open (m, c->fd, out, out_len + c->len - head_len) < 0)
                        close (c->fd);
        }
        free (out);
}

static void
serve_pending (NetMux *m, Pending **p, size_t *n, struct pollfd *fds)
{
        time_t now = time (NULL);

        for (size_t i = *n; i-- > 0;) {
                Pending *c = p[i];
                ssize_t r = 0;
                const char *end;

                if (fds[1 + i].revents)
                        r = recv (c->fd, c->buf + c->len, MAX_HEAD - c->len, MSG_DONTWAIT);
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                        r = 1; /* nothing yet */
                else if (r > 0)
                        c->len += (size_t) r;
                c->buf[c->len] = '\0';
                end = c->len >= 4 ? memmem (c->buf, c->len, "\r\n\r\n", 4) : NULL;
                if (end) {
                        forward (m, c, (size_t) (end + 4 - c->buf));
                } else if (r <= 0 && fds[1 + i].revents) {
                        close (c->fd); /* closed before a head */
                } else if (c->len == MAX_HEAD || now > c->deadline) {
                        close (c->fd);
                } else {
                        continue;
                }
                pending_done (p, n, i);
        }
}

static int
listen_loopback (int port, int *ret_port)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
        socklen_t alen = sizeof a;
        int one = 1;
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        a.sin_addr.s_addr = htonl (INADDR_LOOPBACK); /* never another address */
        if (fd < 0 || setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            bind (fd, (struct sockaddr *) &a, sizeof a) < 0 || listen (fd, 64) < 0 ||
            getsockname (fd, (struct sockaddr *) &a, &alen) < 0)
                return -errno;
        *ret_port = ntohs (a.sin_port);
        return fd;
}

static void
load_placeholders (void)
{
        const char *env = getenv ("CORRAL_PLACEHOLDERS");
        char *copy = env ? strdup (env) : NULL;
        char *save = NULL;

        placeholders = calloc (64, sizeof *placeholders);
        for (char *t = copy ? strtok_r (copy, ",", &save) : NULL; t && n_placeholders < 64;
             t = strtok_r (NULL, ",", &save))
                if (strlen (t) == PLACEHOLDER_LEN && strncmp (t, PLACEHOLDER_PREFIX, 10) == 0)
                        placeholders[n_placeholders++] = strdup (t);
        free (copy);
}

typedef struct {
        const char *serial;
        int stream;
        int port;
        const char *state_dir;
        const char *bundle;
        const char *user;
} Options;

/* Session mode --------------------------------------------------------------------------------- */

typedef struct {
        NetSession session;
        int state; /* 0 waiting, 1 got it, -errno refused */
} Hello;

static void
on_hello (void *user, const cJSON *result, const cJSON *error)
{
        Hello *h = user;

        h->state = error ? -EACCES : netsession_parse (result, &h->session) < 0 ? -EINVAL : 1;
}

/* egress.reset after our session: the host has a new one; start again to fetch it. */
static int
on_event (void *user, NetMux *m, const char *event, const cJSON *data)
{
        const Hello *h = user;

        if (strcmp (event, "egress.reset") == 0 && h->state == 1)
                return -ECONNRESET;
        return 0;
}

/* A virtio port reports POLLHUP while no host has it open: wait for one. */
static void
wait_for_host (int fd)
{
        for (;;) {
                struct pollfd p = { fd, POLLOUT, 0 };

                if (poll (&p, 1, -1) >= 0 && !(p.revents & POLLHUP))
                        return;
                usleep (100 * 1000);
        }
}

static int
fetch_session (NetMux *m, Hello *h)
{
        cJSON *params = cJSON_CreateObject ();
        int r;

        cJSON_AddNumberToObject (params, "version", 1);
        netmux_set_handlers (m, NULL, on_event, h);
        r = netmux_request (m, "egress.hello", params, on_hello, h);
        while (r == 0 && h->state == 0)
                r = netmux_poll (m, NULL, 0, 1000);
        return r < 0 ? r : h->state < 0 ? h->state : 0;
}

static int
drop_privileges (const char *name)
{
        const struct passwd *pw = getpwnam (name);

        if (!pw)
                return -ENOENT;
        if (setgroups (0, NULL) < 0 || setgid (pw->pw_gid) < 0 || setuid (pw->pw_uid) < 0)
                return -errno;
        return 0;
}

static int
apply_session (const Options *o, Hello *h)
{
        int r;

        token = h->session.token;
        placeholders = h->session.values;
        n_placeholders = h->session.n_env;
        if ((r = netsession_write_trust (&h->session, o->bundle)) < 0) {
                fprintf (stderr, "corral-netproxy: cannot update %s: %s\n", o->bundle,
                         strerror (-r));
                return r;
        }
        if ((r = netsession_write_env (&h->session, o->state_dir, o->port)) < 0) {
                fprintf (stderr, "corral-netproxy: cannot write %s/net.env: %s\n", o->state_dir,
                         strerror (-r));
                return r;
        }
        return 0;
}

/* Serving ------------------------------------------------------------------------------------- */

static int
serve (NetMux *m, int listener)
{
        Pending *pending[MAX_PENDING];
        size_t n_pending = 0;
        int r;

        for (;;) {
                struct pollfd extra[1 + MAX_PENDING];

                extra[0] = (struct pollfd){ listener, POLLIN, 0 };
                for (size_t i = 0; i < n_pending; i++)
                        extra[1 + i] = (struct pollfd){ pending[i]->fd, POLLIN, 0 };
                if ((r = netmux_poll (m, extra, 1 + n_pending, 1000)) < 0)
                        return r; /* the host went away: nothing can leave any more */
                serve_pending (m, pending, &n_pending, extra);
                if (extra[0].revents & POLLIN) {
                        int fd = accept4 (listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

                        if (fd >= 0 && n_pending == MAX_PENDING) {
                                close (fd);
                        } else if (fd >= 0) {
                                Pending *c = calloc (1, sizeof *c);

                                c->fd = fd;
                                c->deadline = time (NULL) + HEAD_TIMEOUT_S;
                                pending[n_pending++] = c;
                        }
                }
        }
}

static bool
parse_options (int argc, char **argv, Options *o)
{
        uint32_t v;

        *o = (Options){ .stream = -1,
                        .state_dir = "/run/corral",
                        .bundle = "/etc/ssl/certs/ca-certificates.crt" };
        for (int i = 1; i < argc; i += 2) {
                const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

                if (!val)
                        return false;
                if (strcmp (arg, "--fd") == 0 && proto_parse_u32 (val, 0, INT32_MAX, &v))
                        o->stream = (int) v;
                else if (strcmp (arg, "--listen") == 0 && proto_parse_u32 (val, 0, 65535, &v))
                        o->port = (int) v;
                else if (strcmp (arg, "--serial") == 0)
                        o->serial = val;
                else if (strcmp (arg, "--state-dir") == 0)
                        o->state_dir = val;
                else if (strcmp (arg, "--trust-bundle") == 0)
                        o->bundle = val;
                else if (strcmp (arg, "--user") == 0)
                        o->user = val;
                else
                        return false;
        }
        return (o->stream >= 0) != (o->serial != NULL);
}

int
main (int argc, char **argv)
{
        Options o;
        Hello h = { 0 };
        int listener, r;
        NetMux *m = NULL;

        if (corral_ensure_std_fds () < 0)
                return 1;
        token = getenv ("CORRAL_PROXY_TOKEN");
        if (!parse_options (argc, argv, &o) || (token && strlen (token) < 16)) {
                fprintf (stderr, "usage: corral-netproxy (--fd N | --serial DEV) [--listen PORT] "
                                 "[--state-dir DIR] [--trust-bundle FILE] [--user NAME]\n"
                                 "  (CORRAL_PROXY_TOKEN, 16+ bytes, skips the host session)\n");
                return 2;
        }
        signal (SIGPIPE, SIG_IGN);
        if (o.serial && (o.stream = open (o.serial, O_RDWR | O_CLOEXEC | O_NOCTTY)) < 0) {
                fprintf (stderr, "corral-netproxy: %s: %s\n", o.serial, strerror (errno));
                return 1;
        }
        if (o.serial)
                wait_for_host (o.stream);
        if ((listener = listen_loopback (o.port, &o.port)) < 0 ||
            (r = netmux_new (o.stream, NULL, NULL, &m)) < 0) {
                fprintf (stderr, "corral-netproxy: %s\n",
                         strerror (-(listener < 0 ? listener : r)));
                return 1;
        }
        if (token) {
                load_placeholders ();
        } else if ((r = fetch_session (m, &h)) == -ECONNRESET) {
                netmux_free (m); /* superseded already: the next start gets the new one */
                netsession_clear (&h.session);
                return 0;
        } else if (r < 0 || (r = apply_session (&o, &h)) < 0) {
                fprintf (stderr, "corral-netproxy: no session from the host: %s\n", strerror (-r));
                netmux_free (m);
                return 1;
        }
        if (o.user && (r = drop_privileges (o.user)) < 0) {
                fprintf (stderr, "corral-netproxy: cannot become %s: %s\n", o.user, strerror (-r));
                return 1;
        }
        printf ("listening on port %d\n", o.port);
        fflush (stdout);
        r = serve (m, listener);
        netmux_free (m);
        netsession_clear (&h.session);
        return r == -EPIPE || r == -ECONNRESET ? 0 : 1;
}
