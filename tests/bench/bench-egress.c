/* bench-egress.c — the host egress proxy next to squid as a plain forward proxy, same run, same
 * loopback origin server (issue: goal >= 1.0x squid on the host path).
 *
 * 64 MiB download and 64 MiB upload through each proxy (one request per connection, median of
 * five), and the latency a proxy adds to a small request (median of 200, minus the same request
 * sent straight to the origin). Squid is started here on a loopback port with a temporary
 * configuration (no cache, no logs); without /usr/sbin/squid the benchmark is skipped. As in a
 * VM's session a secret is bound (to another host), so every upload through the egress proxy is
 * checked for its value. The last line is the ratio.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-proxy.h"
#include "egress-test.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#define SIZE (64u * 1024 * 1024)
#define ROUNDS 5
#define PINGS 200
#define SQUID "/usr/sbin/squid"

static double
now (void)
{
        return (double) g_get_monotonic_time () / 1e6;
}

static int
cmp_double (gconstpointer a, gconstpointer b)
{
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

static double
median (double *v, guint n)
{
        qsort (v, n, sizeof *v, (GCompareFunc) cmp_double);
        return v[n / 2];
}

static void
send_all (GSocket *s, const void *data, gsize len)
{
        const char *p = data;

        while (len > 0) {
                gssize n = g_socket_send (s, p, len, NULL, NULL);
                if (n <= 0)
                        g_error ("send failed");
                p += n;
                len -= (gsize) n;
        }
}

/* One request through the proxy on port (direct to the origin when absolute is FALSE); returns
 * the bytes of the response. */
static guint64
request (guint16 port,
         gboolean absolute,
         guint16 origin,
         const char *method,
         const char *path,
         guint64 body,
         const char *auth)
{
        static guint8 buf[256 * 1024];
        g_autoptr (GSocket) s = egress_test_connect (port);
        g_autofree char *target = absolute ? g_strdup_printf ("http://127.0.0.1:%u%s", origin, path)
                                           : g_strdup (path);
        g_autofree char *length =
                body ? g_strdup_printf ("Content-Length: %" G_GUINT64_FORMAT "\r\n", body)
                     : g_strdup ("");
        g_autofree char *head = g_strdup_printf ("%s %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%s%s"
                                                 "Connection: close\r\n\r\n",
                                                 method, target, origin, length, auth ? auth : "");
        guint64 total = 0;
        gssize n;

        send_all (s, head, strlen (head));
        for (guint64 sent = 0; sent < body; sent += sizeof buf)
                send_all (s, buf, (gsize) MIN (sizeof buf, body - sent));
        while ((n = g_socket_receive (s, (char *) buf, sizeof buf, NULL, NULL)) > 0)
                total += (guint64) n;
        return total;
}

typedef struct {
        const char *name;
        guint16 port;
        const char *auth; /* Proxy-Authorization line, for the guest proxy */
        double down, up, latency; /* MiB/s, MiB/s, ms */
} Path;

static void
measure (Path *paths, guint n, guint16 origin)
{
        g_autofree char *blob = g_strdup_printf ("/zeros?n=%u", SIZE);
        double d[4][ROUNDS], u[4][ROUNDS];
        double lat[4][PINGS];

        /* Interleaved, so that a slow moment of the machine hits every path alike. */
        for (guint r = 0; r < ROUNDS; r++) {
                for (guint i = 0; i < n; i++) {
                        double t = now ();

                        if (request (paths[i].port, paths[i].port != origin, origin, "GET", blob, 0,
                                     paths[i].auth) < SIZE)
                                g_error ("%s: short download", paths[i].name);
                        d[i][r] = SIZE / (1024.0 * 1024.0) / (now () - t);
                        t = now ();
                        if (request (paths[i].port, paths[i].port != origin, origin, "POST",
                                     "/discard", SIZE, paths[i].auth) == 0)
                                g_error ("%s: upload failed", paths[i].name);
                        u[i][r] = SIZE / (1024.0 * 1024.0) / (now () - t);
                }
        }
        for (guint k = 0; k < PINGS; k++) {
                for (guint i = 0; i < n; i++) {
                        double t = now ();

                        request (paths[i].port, paths[i].port != origin, origin, "GET", "/", 0,
                                 paths[i].auth);
                        lat[i][k] = (now () - t) * 1000.0;
                }
        }
        for (guint i = 0; i < n; i++) {
                paths[i].down = median (d[i], ROUNDS);
                paths[i].up = median (u[i], ROUNDS);
                paths[i].latency = median (lat[i], PINGS);
        }
}

static void
die_with_parent (gpointer data)
{
        prctl (PR_SET_PDEATHSIG, SIGKILL);
}

static GSubprocess *
start_squid (const char *dir, guint16 *ret_port)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GSocket) probe = NULL;
        g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
        g_autoptr (GSocketAddress) any = g_inet_socket_address_new (lo, 0);
        g_autoptr (GSocketAddress) bound = NULL;
        g_autofree char *conf = g_build_filename (dir, "squid.conf", NULL);
        g_autofree char *text = NULL;
        g_autoptr (GSubprocessLauncher) launcher = NULL;
        GSubprocess *proc;
        guint16 port;

        /* a free port: bind 0, read it, release it */
        probe = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, 0, NULL);
        g_socket_bind (probe, any, TRUE, NULL);
        bound = g_socket_get_local_address (probe, NULL);
        port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
        g_socket_close (probe, NULL);
        text = g_strdup_printf ("http_port 127.0.0.1:%u\nhttp_access allow localhost\n"
                                "http_access deny all\ncache deny all\ncache_mem 8 MB\n"
                                "access_log none\ncache_store_log none\ncache_log %s/cache.log\n"
                                "pid_filename %s/squid.pid\ncoredump_dir %s\npinger_enable off\n"
                                "shutdown_lifetime 0 seconds\n",
                                port, dir, dir, dir);
        g_assert_true (g_file_set_contents (conf, text, -1, NULL));
        /* squid drops privileges when started as root: let its user write the logs */
        g_chmod (dir, 0777);
        launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
                                              G_SUBPROCESS_FLAGS_STDERR_SILENCE);
        /* squid must not outlive a benchmark that is killed */
        g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
        proc = g_subprocess_launcher_spawn (launcher, &error, SQUID, "-N", "-f", conf, NULL);
        g_assert_no_error (error);
        for (int i = 0; i < 300; i++) {
                g_autoptr (GSocket) s =
                        g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, 0, NULL);
                g_autoptr (GSocketAddress) a = g_inet_socket_address_new (lo, port);

                if (g_socket_connect (s, a, NULL, NULL)) {
                        *ret_port = port;
                        return proc;
                }
                g_usleep (100 * 1000);
        }
        g_error ("squid did not start (see %s/cache.log)", dir);
}

#define TOKEN "bench-token-0123456789abcdef"

/* corral-netproxy with its channel stream on a socketpair to the proxy (the guest path). */
static GSubprocess *
start_guest_proxy (CorralEgressProxy *proxy, guint16 *ret_port)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GSubprocessLauncher) l =
                g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
        g_autoptr (GDataInputStream) in = NULL;
        g_autofree char *exe = g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "keychain-bridge",
                                                 "guest", "corral-netproxy", NULL);
        g_autofree char *line = NULL;
        GSubprocess *proc;
        int sv[2];

        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_assert_true (corral_egress_proxy_serve_stream (proxy, sv[0], &error));
        g_subprocess_launcher_take_fd (l, sv[1], 3);
        g_subprocess_launcher_setenv (l, "CORRAL_PROXY_TOKEN", TOKEN, TRUE);
        proc = g_subprocess_launcher_spawn (l, &error, exe, "--fd", "3", "--listen", "0", NULL);
        g_assert_no_error (error);
        in = g_data_input_stream_new (g_subprocess_get_stdout_pipe (proc));
        line = g_data_input_stream_read_line (in, NULL, NULL, &error);
        g_assert_nonnull (line);
        *ret_port = (guint16) g_ascii_strtoull (line + strlen ("listening on port "), NULL, 10);
        return proc;
}

int
main (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *dir = NULL, *audit = NULL, *cmd = NULL;
        g_autoptr (EgressTestServer) origin = egress_test_server_new (NULL, FALSE);
        guint16 op = egress_test_server_get_port (origin);
        g_autoptr (CorralEgressPolicy) policy =
                corral_egress_policy_new (CORRAL_EGRESS_PRESET_ALLOWLIST);
        g_autoptr (CorralEgressProxy) proxy = NULL;
        g_autoptr (GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
        g_autoptr (GSocketAddress) any = g_inet_socket_address_new (lo, 0);
        g_autoptr (GSocketAddress) bound = NULL;
        g_autoptr (GSubprocess) squid = NULL;
        g_autofree char *rule = g_strdup_printf ("127.0.0.1:%u", op);
        g_autoptr (GSubprocess) guest = NULL;
        g_autofree char *b64 =
                g_base64_encode ((const guchar *) "corral:" TOKEN, strlen ("corral:" TOKEN));
        g_autofree char *auth = g_strdup_printf ("Proxy-Authorization: Basic %s\r\n", b64);
        const char *hosts[] = { "api.example.com", NULL };
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new ("BENCH_TOKEN", hosts, "authorization", "Bearer {}", NULL);
        g_autoptr (CorralEgressCredentials) creds = corral_egress_credentials_new ();
        Path paths[4] = {
                { "corral egress proxy" }, { "squid" }, { "direct" }, { "guest proxy+channel" }
        };

        if (!g_file_test (SQUID, G_FILE_TEST_IS_EXECUTABLE)) {
                g_print ("squid is not installed (tools/setup-deps --tests): skipped\n");
                return 77;
        }
        dir = g_dir_make_tmp ("corral-bench-egress-XXXXXX", &error);
        g_assert_no_error (error);
        audit = g_build_filename (dir, "audit.jsonl", NULL);
        g_assert_true (corral_egress_policy_add_rule (policy, TRUE, rule, NULL));
        proxy = corral_egress_proxy_new (policy);
        g_assert_true (corral_egress_proxy_set_audit_path (proxy, audit, NULL));
        /* As in a VM's session, where every keychain secret is bound: what the guest sends is
         * checked for each one's value (SECURITY.md K9), here on every upload. */
        g_free (corral_egress_credentials_add (creds, info, "bench-secret-7f3a9c21e0d84b56a1c2"));
        g_assert_true (corral_egress_proxy_set_credentials (proxy, creds, &error));
        g_assert_true (corral_egress_proxy_listen (proxy, any, &bound, &error));
        paths[0].port = g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound));
        squid = start_squid (dir, &paths[1].port);
        paths[2].port = op;
        guest = start_guest_proxy (proxy, &paths[3].port);
        paths[3].auth = auth;

        measure (paths, 4, op);
        g_subprocess_send_signal (guest, SIGKILL);
        g_subprocess_wait (guest, NULL, NULL);
        g_subprocess_send_signal (squid, SIGKILL);
        g_subprocess_wait (squid, NULL, NULL);
        corral_egress_proxy_shutdown (proxy);
        cmd = g_strdup_printf ("rm -rf '%s'", dir);
        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);

        for (guint i = 0; i < 2; i++)
                g_print ("%-20s download %6.0f MiB/s  upload %6.0f MiB/s  request %.3f ms "
                         "(+%.3f ms over direct)\n",
                         paths[i].name, paths[i].down, paths[i].up, paths[i].latency,
                         paths[i].latency - paths[2].latency);
        g_print ("%-20s download %6.0f MiB/s  upload %6.0f MiB/s  request %.3f ms\n", paths[2].name,
                 paths[2].down, paths[2].up, paths[2].latency);
        g_print ("%-20s download %6.0f MiB/s  upload %6.0f MiB/s  request %.3f ms (the whole "
                 "path from the VM, minus the virtio port)\n",
                 paths[3].name, paths[3].down, paths[3].up, paths[3].latency);
        g_print ("egress proxy vs squid: download ratio %.2f, upload ratio %.2f, added latency "
                 "ratio %.2f (goal >= 1.0 for throughput)\n",
                 paths[0].down / paths[1].down, paths[0].up / paths[1].up,
                 (paths[0].latency - paths[2].latency) / (paths[1].latency - paths[2].latency));
        return 0;
}
