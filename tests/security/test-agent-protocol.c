/* test-agent-protocol.c — the real corral-agent against hostile and ordinary frames
 * (SECURITY-TESTS 23, 24, 26 at the agent; exec and file happy paths).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "agent-peer.h"

#define QUIET_MS 300
#define MAX_RSS_KB (48 * 1024)

static AgentPeer *
start (void)
{
        AgentPeer *p = peer_spawn (NULL, TRUE);

        cJSON_Delete (peer_hello (p));
        return p;
}

static void
finish (AgentPeer *p)
{
        int status = peer_finish (p);

        g_assert_true (WIFEXITED (status));
        g_assert_cmpint (WEXITSTATUS (status), ==, 0);
}

/* Asserts a success response. */
static void
ok (AgentPeer *p, guint64 id)
{
        cJSON *root;

        peer_result (p, id, &root);
        cJSON_Delete (root);
}

static void
assert_quiet (AgentPeer *p)
{
        PeerFrame *f = peer_any (p, QUIET_MS);

        if (f)
                g_error ("unexpected frame of type %s", proto_frame_type_name (f->type));
}

static void
assert_small (AgentPeer *p)
{
        long rss = peer_rss_kb (p);

        g_assert_true (peer_alive (p));
        if (peer_wrapped ())
                return; /* the wrapper's own memory */
        g_assert_cmpint (rss, >, 0);
        g_assert_cmpint (rss, <, MAX_RSS_KB);
}

static const char *
str (const cJSON *obj, const char *key)
{
        const char *s = NULL;

        g_assert_cmpint (proto_json_get_string (obj, key, 0, &s), ==, 0);
        return s;
}

static int64_t
num (const cJSON *obj, const char *key)
{
        int64_t v = 0;

        g_assert_cmpint (proto_json_get_int (obj, key, G_MININT64 / 2, G_MAXINT64 / 2, &v), ==, 0);
        return v;
}

static gboolean
process_gone (pid_t pid)
{
        gint64 deadline = g_get_monotonic_time () + (gint64) peer_timeout (5000) * 1000;

        while (g_get_monotonic_time () < deadline) {
                if (kill (pid, 0) < 0 && errno == ESRCH)
                        return TRUE;
                g_usleep (20000);
        }
        return FALSE;
}

/* Whether pid has exec'd into a program called comm (its shell ran what came before). */
static gboolean
process_became (pid_t pid, const char *comm)
{
        g_autofree char *path = g_strdup_printf ("/proc/%d/comm", (int) pid);
        gint64 deadline = g_get_monotonic_time () + (gint64) peer_timeout (5000) * 1000;

        while (g_get_monotonic_time () < deadline) {
                g_autofree char *text = NULL;

                if (g_file_get_contents (path, &text, NULL, NULL) &&
                    g_str_equal (g_strchomp (text), comm))
                        return TRUE;
                g_usleep (20000);
        }
        return FALSE;
}

/* HELLO and sessions -------------------------------------------------------------------------- */

static void
test_hello (void)
{
        AgentPeer *p = peer_spawn (NULL, TRUE);
        g_autoptr (cJSON) h = peer_hello (p);
        const cJSON *features;
        const char *boot_id = str (h, "boot_id");
        gboolean has_exec = FALSE;
        const cJSON *item;

        g_assert_cmpint (num (h, "version"), ==, 1);
        g_assert_cmpstr (str (h, "role"), ==, "agent");
        g_assert_cmpint (num (h, "window"), ==, PROTO_DEFAULT_WINDOW);
        g_assert_cmpint (num (h, "max_payload"), ==, PROTO_MAX_PAYLOAD);
        g_assert_cmpuint (strlen (boot_id), ==, 32);
        g_assert_cmpuint (strspn (boot_id, "0123456789abcdef"), ==, 32);
        g_assert_cmpint (proto_json_get_array (h, "features", 0, &features), ==, 0);
        cJSON_ArrayForEach (item, features)
                has_exec |= cJSON_IsString (item) && strcmp (item->valuestring, "exec") == 0;
        g_assert_true (has_exec);
        g_assert_null (cJSON_GetObjectItemCaseSensitive (h, "error"));
        peer_assert_pong (p);
        finish (p);
}

static void
test_before_hello_ignored (void)
{
        AgentPeer *p = peer_spawn (NULL, TRUE);
        guint8 ping[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
        g_autoptr (cJSON) h = NULL;

        peer_request (p, "info", NULL);
        peer_request (p, "exec.start", "{\"shell\":\"touch /tmp/never\",\"channel\":1}");
        peer_send_frame (p, PROTO_FRAME_PING, 0, 0, ping, 8);
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 1, "abc", 3);
        peer_credit (p, 1, 100);
        peer_send_text (p, PROTO_FRAME_RESPONSE, "{\"id\":1,\"result\":{}}");
        assert_quiet (p);
        h = peer_hello (p);
        /* Nothing of the ignored requests arrives late either. */
        assert_quiet (p);
        peer_assert_pong (p);
        finish (p);
}

static void
test_hello_unsupported_version (void)
{
        AgentPeer *p = peer_spawn (NULL, TRUE);
        PeerFrame *f;
        g_autoptr (cJSON) obj = NULL;
        const cJSON *err;

        peer_send_text (p, PROTO_FRAME_HELLO,
                        "{\"version\":7,\"min_version\":5,\"role\":\"host\","
                        "\"nonce\":\"0123456789abcdef0123456789abcdef\"}");
        f = peer_any (p, peer_timeout (5000));
        peer_require (f);
        g_assert_cmpint (f->type, ==, PROTO_FRAME_HELLO);
        g_assert_cmpint (proto_json_parse (g_bytes_get_data (f->payload, NULL),
                                           g_bytes_get_size (f->payload), &obj),
                         ==, 0);
        peer_frame_free (f);
        g_assert_cmpint (proto_json_get_object (obj, "error", &err), ==, 0);
        g_assert_cmpstr (str (err, "code"), ==, "unsupported-version");
        /* No session: requests stay unanswered. */
        peer_request (p, "info", NULL);
        assert_quiet (p);
        cJSON_Delete (peer_hello (p));
        peer_assert_pong (p);
        finish (p);
}

static void
test_hello_invalid_ignored (void)
{
        static const char *const bad[] = {
                "{\"version\":1,\"role\":\"host\",\"nonce\":\"short\"}",
                "{\"version\":1,\"role\":\"host\",\"nonce\":\"0123456789ABCDEF0123456789ABCDEF\"}",
                "{\"version\":1,\"role\":\"agent\",\"nonce\":\"0123456789abcdef0123456789abcdef\"}",
                ("{\"version\":\"1\",\"role\":\"host\",\"nonce\":"
                 "\"0123456789abcdef0123456789abcdef\"}"),
                "{\"role\":\"host\",\"nonce\":\"0123456789abcdef0123456789abcdef\"}",
                "[1,2,3]",
                "{\"version\":1,",
        };
        AgentPeer *p = peer_spawn (NULL, TRUE);

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
                peer_send_text (p, PROTO_FRAME_HELLO, bad[i]);
        assert_quiet (p);
        cJSON_Delete (peer_hello (p));
        peer_assert_pong (p);
        finish (p);
}

/* A second HELLO ends the session: foreground killed, background kept and attachable. */
static void
test_second_hello (void)
{
        AgentPeer *p = start ();
        pid_t fg_pid, bg_pid;
        guint64 bg, id;
        cJSON *root, *res;
        const cJSON *procs, *item;
        ExecResult r = { 0 };
        gboolean listed = FALSE;
        g_autofree char *attach = NULL;

        peer_exec_shell (p, "exec sleep 1000", 1, NULL, &fg_pid);
        bg = peer_exec_shell (p, "echo from-background; exec sleep 1000", 2, "\"background\":true",
                              &bg_pid);
        /* Its echo is in the pipe before anything below can kill it. */
        g_assert_true (process_became (bg_pid, "sleep"));

        cJSON_Delete (peer_hello (p));
        g_assert_true (process_gone (fg_pid));
        g_assert_cmpint (kill (bg_pid, 0), ==, 0);

        id = peer_request (p, "exec.list", NULL);
        res = peer_result (p, id, &root);
        g_assert_cmpint (proto_json_get_array (res, "procs", 0, &procs), ==, 0);
        cJSON_ArrayForEach (item, procs)
                listed |= num (item, "proc") == (int64_t) bg;
        g_assert_true (listed);
        cJSON_Delete (root);

        attach = g_strdup_printf ("{\"proc\":%" G_GUINT64_FORMAT ",\"channel\":3}", bg);
        id = peer_request (p, "exec.attach", attach);
        ok (p, id);
        id = peer_request (p, "exec.kill", attach);
        ok (p, id);
        g_assert_true (peer_collect_exec (p, 3, &r, peer_timeout (5000)));
        g_assert_cmpstr (r.out->str, ==, "from-background\n");
        g_assert_cmpint (r.eofs, ==, 2);
        g_assert_cmpint (num (r.exit, "signal"), ==, SIGTERM);
        exec_result_clear (&r);
        finish (p);
}

/* Frame lengths (SECURITY-TESTS 23) ----------------------------------------------------------- */

static void
send_header (AgentPeer *p, guint8 type, guint32 channel, guint32 length)
{
        guint8 hdr[PROTO_HEADER_SIZE];

        proto_header_encode (hdr, type, 0, channel, length);
        peer_send_raw (p, hdr, sizeof hdr);
}

static void
test_length_zero (void)
{
        AgentPeer *p = start ();
        guint8 ping[8] = { 0 };

        /* Legal empty frames are fine... */
        peer_send_frame (p, PROTO_FRAME_DATA, PROTO_DATA_EOF, 5, NULL, 0);
        peer_send_frame (p, PROTO_FRAME_CLOSE, 0, 5, NULL, 0);
        peer_assert_pong (p);
        /* ...an empty control frame is a framing error: the agent waits for a new HELLO. */
        send_header (p, PROTO_FRAME_REQUEST, 0, 0);
        peer_send_frame (p, PROTO_FRAME_PING, 0, 0, ping, 8);
        assert_quiet (p);
        cJSON_Delete (peer_hello (p));
        peer_assert_pong (p);
        assert_small (p);
        finish (p);
}

static void
test_length_max (void)
{
        AgentPeer *p = start ();
        g_autofree char *payload = g_malloc (PROTO_MAX_PAYLOAD);
        const char *head = "{\"id\":77,\"method\":\"no.such.method\"}";

        /* Exactly the maximum: a valid request padded with whitespace. */
        memset (payload, ' ', PROTO_MAX_PAYLOAD);
        memcpy (payload, head, strlen (head));
        peer_send_frame (p, PROTO_FRAME_REQUEST, 0, 0, payload, PROTO_MAX_PAYLOAD);
        peer_assert_error (p, 77, "unknown-method");
        /* And a maximal DATA frame to a channel that does not exist: dropped. */
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 9, payload, PROTO_MAX_PAYLOAD);
        peer_assert_pong (p);
        assert_small (p);
        finish (p);
}

static void
check_oversized (guint32 length, gboolean send_payload)
{
        AgentPeer *p = start ();
        guint8 ping[8] = { 0 };

        send_header (p, PROTO_FRAME_REQUEST, 0, length);
        if (send_payload) {
                g_autofree char *junk = g_malloc (PROTO_MAX_PAYLOAD + 1);

                memset (junk, 'x', PROTO_MAX_PAYLOAD + 1);
                peer_send_raw (p, junk, PROTO_MAX_PAYLOAD + 1);
        }
        peer_send_frame (p, PROTO_FRAME_PING, 0, 0, ping, 8);
        assert_quiet (p);
        assert_small (p);
        cJSON_Delete (peer_hello (p));
        peer_assert_pong (p);
        assert_small (p);
        finish (p);
}

static void
test_length_max_plus_one (void)
{
        check_oversized (PROTO_MAX_PAYLOAD + 1, TRUE);
}

static void
test_length_all_ones (void)
{
        check_oversized (0xFFFFFFFFu, FALSE);
}

/* Garbage, truncation, bad JSON (SECURITY-TESTS 24) ------------------------------------------- */

static void
test_garbage_resync (void)
{
        AgentPeer *p = start ();
        guint8 garbage[8192];
        pid_t pid;
        guint8 fake_hello[PROTO_HEADER_SIZE + 16];

        peer_exec_shell (p, "exec sleep 1000", 4, NULL, &pid);
        for (gsize i = 0; i < sizeof garbage; i++)
                garbage[i] = (guint8) (i * 7 + 3);
        garbage[0] = 'G'; /* never a magic byte at the frame boundary */
        peer_send_raw (p, garbage, sizeof garbage);
        /* A HELLO header with a garbage payload in the middle of the noise: skipped too. */
        proto_header_encode (fake_hello, PROTO_FRAME_HELLO, 0, 0, 16);
        memset (fake_hello + PROTO_HEADER_SIZE, 0xFF, 16);
        peer_send_raw (p, fake_hello, sizeof fake_hello);
        peer_send_raw (p, garbage, 100);
        peer_request (p, "info", NULL);
        assert_quiet (p);
        /* The session ended with the framing error: the foreground process is gone. */
        g_assert_true (process_gone (pid));
        cJSON_Delete (peer_hello (p));
        peer_assert_pong (p);
        finish (p);
}

static void
test_truncated_frame (void)
{
        AgentPeer *p = start ();
        const char *req = "{\"id\":5,\"method\":\"info\"}";
        guint8 junk[20];
        g_autoptr (cJSON) obj = NULL;

        /* A frame whose payload is completed by garbage: malformed JSON, refused. */
        send_header (p, PROTO_FRAME_REQUEST, 0, (guint32) strlen (req) + sizeof junk);
        peer_send_raw (p, req, strlen (req) - 3);
        memset (junk, '}', sizeof junk);
        peer_send_raw (p, junk, sizeof junk);
        peer_send_raw (p, junk, 3);
        obj = peer_null_response (p);
        g_assert_cmpstr (str (cJSON_GetObjectItemCaseSensitive (obj, "error"), "code"), ==,
                         "invalid-request");
        peer_assert_pong (p);
        finish (p);

        /* A frame cut off by the end of the stream: the agent exits cleanly. */
        p = start ();
        send_header (p, PROTO_FRAME_REQUEST, 0, 100);
        peer_send_raw (p, req, 10);
        finish (p);
}

static void
expect_null_invalid (AgentPeer *p, const void *payload, gsize len)
{
        g_autoptr (cJSON) obj = NULL;

        peer_send_frame (p, PROTO_FRAME_REQUEST, 0, 0, payload, len);
        obj = peer_null_response (p);
        g_assert_cmpstr (str (cJSON_GetObjectItemCaseSensitive (obj, "error"), "code"), ==,
                         "invalid-request");
}

static void
test_invalid_utf8 (void)
{
        static const char *const bad[] = {
                "{\"id\":1,\"method\":\"info\",\"params\":{\"x\":\"\xff\xfe\"}}",
                "{\"id\":2,\"method\":\"info\",\"params\":{\"x\":\"\xc0\xaf\"}}", /* overlong */
                "{\"id\":3,\"method\":\"info\",\"params\":{\"x\":\"\xed\xa0\x80\"}}", /* surrogate
                                                                                       */
                "{\"id\":4,\"method\":\"info\",\"params\":{\"x\":\"\xf4\x90\x80\x80\"}}",
                "{\"id\":5,\"method\":\"in\xe2\x82\"}", /* truncated */
        };
        AgentPeer *p = start ();
        const char nul[] = "{\"id\":6,\"method\":\"info\"}\0";

        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
                expect_null_invalid (p, bad[i], strlen (bad[i]));
        expect_null_invalid (p, nul, sizeof nul - 1);
        peer_assert_pong (p);
        finish (p);
}

static void
test_deep_nesting (void)
{
        AgentPeer *p = start ();
        GString *s = g_string_new ("{\"id\":1,\"method\":\"info\",\"params\":{\"x\":");
        g_autofree char *deep = NULL;
        guint64 id;

        /* Depth 33: one level too deep. */
        for (int i = 0; i < 31; i++)
                g_string_append_c (s, '[');
        for (int i = 0; i < 31; i++)
                g_string_append_c (s, ']');
        g_string_append (s, "}}");
        expect_null_invalid (p, s->str, s->len);
        g_string_free (s, TRUE);

        /* 500,000 levels: refused before cJSON recurses. */
        deep = g_malloc (1000000 + 64);
        {
                const char *head = "{\"id\":2,\"method\":\"info\",\"params\":{\"x\":";
                gsize hl = strlen (head);

                memcpy (deep, head, hl);
                memset (deep + hl, '[', 500000);
                expect_null_invalid (p, deep, hl + 500000);
        }

        /* Depth 32 is fine. */
        s = g_string_new (NULL);
        g_string_append (s, "{\"x\":");
        for (int i = 0; i < 30; i++)
                g_string_append_c (s, '[');
        for (int i = 0; i < 30; i++)
                g_string_append_c (s, ']');
        g_string_append_c (s, '}');
        id = peer_request (p, "info", s->str);
        g_string_free (s, TRUE);
        ok (p, id);
        peer_assert_pong (p);
        finish (p);
}

static void
test_huge_json (void)
{
        AgentPeer *p = start ();
        GString *s = g_string_new ("{\"pad\":\"");
        guint64 id;

        /* Nearly 1 MiB of unknown keys: ignored. */
        while (s->len < PROTO_MAX_PAYLOAD - 1000)
                g_string_append (s,
                                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        g_string_append (s, "\",\"many\":[");
        g_string_append (s, "0");
        g_string_append (s, "]}");
        id = peer_request (p, "info", s->str);
        ok (p, id);
        g_string_free (s, TRUE);

        /* 100,000 array items. */
        s = g_string_new ("{\"x\":[0");
        for (int i = 0; i < 100000; i++)
                g_string_append (s, ",1");
        g_string_append (s, "]}");
        id = peer_request (p, "info", s->str);
        ok (p, id);
        g_string_free (s, TRUE);

        /* argv / env beyond their limits. */
        s = g_string_new ("{\"channel\":1,\"argv\":[\"true\"");
        for (int i = 0; i < 4096; i++)
                g_string_append (s, ",\"x\"");
        g_string_append (s, "]}");
        id = peer_request (p, "exec.start", s->str);
        peer_assert_error (p, id, "too-large");
        g_string_free (s, TRUE);

        s = g_string_new ("{\"channel\":1,\"argv\":[\"true\"],\"env\":{");
        for (int i = 0; i < 4097; i++)
                g_string_append_printf (s, "%s\"K%d\":\"v\"", i ? "," : "", i);
        g_string_append (s, "}}");
        id = peer_request (p, "exec.start", s->str);
        peer_assert_error (p, id, "too-large");
        g_string_free (s, TRUE);

        peer_assert_pong (p);
        assert_small (p);
        finish (p);
}

static void
test_unknown_method (void)
{
        AgentPeer *p = start ();
        guint64 id;

        id = peer_request (p, "no.such", NULL);
        peer_assert_error (p, id, "unknown-method");
        id = peer_request (p, "", NULL);
        peer_assert_error (p, id, "unknown-method");
        id = peer_request (p, "exec.start.extra", "{\"channel\":1,\"argv\":[\"true\"]}");
        peer_assert_error (p, id, "unknown-method");
        id = peer_request (p, "EXEC.START", NULL);
        peer_assert_error (p, id, "unknown-method");
        peer_assert_pong (p);
        finish (p);
}

static void
test_wrong_types (void)
{
        static const struct {
                const char *method, *params, *code;
        } cases[] = {
                { "exec.start", "{\"argv\":\"ls\",\"channel\":1}", "invalid-request" },
                { "exec.start", "{\"argv\":[1],\"channel\":1}", "invalid-request" },
                { "exec.start", "{\"argv\":[],\"channel\":1}", "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"shell\":\"true\",\"channel\":1}",
                  "invalid-request" },
                { "exec.start", "{\"channel\":1}", "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"]}", "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":\"1\"}", "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":0}", "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":2147483648}", "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1.5}", "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":-1}", "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"timeout_ms\":-1}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"timeout_ms\":1e300}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"env\":{\"A\":1}}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"env\":{\"A=B\":\"x\"}}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"env\":{\"\":\"x\"}}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"env\":[\"A=B\"]}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"user\":true}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"user\":-1}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"user\":\"no-such-user-x\"}",
                  "not-found" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"cwd\":\"relative\"}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"cwd\":5}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"pty\":{\"rows\":\"24\"}}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"pty\":{\"rows\":0}}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"pty\":true}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"rlimits\":{\"nproc\":-1}}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"rlimits\":[]}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"ring\":16777217}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"stdin\":\"yes\"}",
                  "invalid-request" },
                { "exec.start", "{\"argv\":[\"true\"],\"channel\":1,\"background\":1}",
                  "invalid-request" },
                { "exec.kill", "{\"proc\":\"1\"}", "invalid-request" },
                { "exec.kill", "{}", "invalid-request" },
                { "exec.kill", "{\"proc\":999999}", "not-found" },
                { "exec.attach", "{\"proc\":999999,\"channel\":3}", "not-found" },
                { "exec.detach", "{\"proc\":null}", "invalid-request" },
                { "exec.resize", "{\"proc\":[1]}", "invalid-request" },
                { "wait.log", "{\"proc\":true}", "invalid-request" },
                { "file.read", "{\"path\":\"relative\",\"channel\":1}", "invalid-request" },
                { "file.read", "{\"path\":5,\"channel\":1}", "invalid-request" },
                { "file.read", "{\"path\":\"/etc/hostname\"}", "invalid-request" },
                { "file.read", "{\"path\":\"/etc/hostname\",\"channel\":1,\"offset\":-1}",
                  "invalid-request" },
                { "file.read", "{\"path\":\"/no/such/file\",\"channel\":1}", "not-found" },
                { "file.write", "{\"path\":\"/tmp/x\",\"channel\":1,\"mode\":\"bogus\"}",
                  "invalid-request" },
                { "file.write", "{\"path\":\"/tmp/x\",\"channel\":1,\"perm\":\"0644\"}",
                  "invalid-request" },
                { "file.write", "{\"path\":\"/tmp/x\",\"channel\":1,\"perm\":65536}",
                  "invalid-request" },
                { "file.stat", "{\"path\":[\"/\"]}", "invalid-request" },
                { "file.stat", "{\"path\":\"/\",\"follow\":\"yes\"}", "invalid-request" },
                { "file.stat", "{\"path\":\"\"}", "invalid-request" },
                { "file.list", "{}", "invalid-request" },
                { "file.mkdir", "{\"path\":\"/tmp/a\",\"parents\":1}", "invalid-request" },
                { "file.move", "{\"from\":\"/a\"}", "invalid-request" },
                { "file.remove", "{\"path\":\"/tmp/zz\",\"recursive\":\"true\"}",
                  "invalid-request" },
                { "watch.start", "{\"path\":\"rel\"}", "invalid-request" },
                { "watch.stop", "{\"watch\":\"1\"}", "invalid-request" },
                { "watch.stop", "{\"watch\":12345}", "not-found" },
                { "wait.port", "{\"port\":0}", "invalid-request" },
                { "wait.port", "{\"port\":70000}", "invalid-request" },
                { "wait.port", "{\"port\":80,\"host\":\"example.com\"}", "invalid-request" },
                { "wait.port", "{\"port\":80,\"timeout_ms\":\"5\"}", "invalid-request" },
        };
        static const char *const bad_envelopes[] = {
                "{\"id\":\"1\",\"method\":\"info\"}",
                "{\"id\":0,\"method\":\"info\"}",
                "{\"id\":-3,\"method\":\"info\"}",
                "{\"id\":1.5,\"method\":\"info\"}",
                "{\"id\":9007199254740992,\"method\":\"info\"}",
                "{\"method\":\"info\"}",
                "[1,2]",
                "\"text\"",
                "{\"id\":1,\"method\":\"info\"} trailing",
        };
        AgentPeer *p = start ();
        guint64 id;

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_test_message ("%s %s", cases[i].method, cases[i].params);
                id = peer_request (p, cases[i].method, cases[i].params);
                peer_assert_error (p, id, cases[i].code);
        }
        for (gsize i = 0; i < G_N_ELEMENTS (bad_envelopes); i++)
                expect_null_invalid (p, bad_envelopes[i], strlen (bad_envelopes[i]));

        /* An id is readable but the rest is wrong: the answer names the id. */
        peer_send_text (p, PROTO_FRAME_REQUEST, "{\"id\":900,\"method\":5}");
        peer_assert_error (p, 900, "invalid-request");
        peer_send_text (p, PROTO_FRAME_REQUEST, "{\"id\":901,\"method\":\"info\",\"params\":[1]}");
        peer_assert_error (p, 901, "invalid-request");
        /* "\u0000" would be silently cut by C strings: refused before parsing (proto), so
         * the id is unreadable too. */
        {
                static const char nul_escape[] =
                        "{\"id\":902,\"method\":\"exec.start\",\"params\":"
                        "{\"channel\":1,\"argv\":[\"/bin/echo\\u0000-rf\"]}}";

                expect_null_invalid (p, nul_escape, strlen (nul_escape));
        }
        peer_assert_pong (p);
        finish (p);
}

/* Channels and credit ----------------------------------------------------------------------- */

static gboolean
is_close (const PeerFrame *f, gconstpointer data)
{
        return f->type == PROTO_FRAME_CLOSE && f->channel == GPOINTER_TO_UINT (data);
}

static void
test_data_beyond_credit (void)
{
        const char *const args[] = { "--window", "4096", NULL };
        AgentPeer *p = peer_spawn (args, TRUE);
        g_autoptr (cJSON) h = peer_hello (p);
        g_autofree char *big = g_malloc0 (4097);
        PeerFrame *f;

        g_assert_cmpint (num (h, "window"), ==, 4096);
        peer_exec_shell (p, "exec cat >/dev/null", 8, "\"stdin\":true", NULL);
        /* Exactly the window is fine; one byte more closes the channel. */
        peer_exec_shell (p, "exec sleep 1000", 9, "\"stdin\":true", NULL);
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 8, big, 4096);
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 9, big, 4097);
        f = peer_take (p, is_close, GUINT_TO_POINTER (9), peer_timeout (5000));
        peer_require (f);
        peer_frame_free (f);
        /* Output streams are not the host's to send on. */
        peer_send_frame (p, PROTO_FRAME_DATA, 1, 8, "x", 1);
        f = peer_take (p, is_close, GUINT_TO_POINTER (8), peer_timeout (5000));
        peer_require (f);
        peer_frame_free (f);
        peer_assert_pong (p);
        finish (p);
}

static void
test_data_unknown_channel (void)
{
        AgentPeer *p = start ();
        char buf[1000] = { 0 };
        ExecResult r = { 0 };
        PeerFrame *f;

        peer_exec_shell (p, "true", 3, NULL, NULL);
        g_assert_true (peer_collect_exec (p, 3, &r, peer_timeout (5000)));
        exec_result_clear (&r);
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 777, buf, sizeof buf);
        peer_send_frame (p, PROTO_FRAME_DATA, PROTO_DATA_EOF, 3, buf, sizeof buf); /* closed */
        peer_credit (p, 778, 1000);
        peer_send_frame (p, PROTO_FRAME_CLOSE, 0, 779, NULL, 0);
        peer_assert_pong (p);
        /* Nothing else came back: no error, no CLOSE. */
        f = peer_any (p, QUIET_MS);
        g_assert_null (f);
        finish (p);
}

static gboolean
is_data (const PeerFrame *f, gconstpointer data)
{
        return f->type == PROTO_FRAME_DATA && f->channel == GPOINTER_TO_UINT (data);
}

/* The agent never sends more than the credit it was given. */
static void
test_exec_credit (void)
{
        AgentPeer *p = start ();
        gsize got = 0;
        ExecResult r = { 0 };
        PeerFrame *f;

        peer_exec_shell (p, "head -c 3000000 /dev/zero", 6, NULL, NULL);
        while ((f = peer_take (p, is_data, GUINT_TO_POINTER (6), 500))) {
                got += g_bytes_get_size (f->payload);
                peer_frame_free (f);
        }
        g_assert_cmpuint (got, ==, PROTO_DEFAULT_WINDOW);
        peer_credit (p, 6, (guint32) got);
        g_assert_true (peer_collect_exec (p, 6, &r, peer_timeout (20000)));
        g_assert_cmpuint (got + r.out->len, ==, 3000000);
        g_assert_cmpint (num (r.exit, "code"), ==, 0);
        exec_result_clear (&r);
        assert_small (p);
        finish (p);
}

/* A host that grants endless credit but does not read: the agent's queue stays bounded. */
static void
test_outq_bounded (void)
{
        AgentPeer *p = start ();
        ExecResult r = { 0 };
        guint64 proc, id;
        g_autofree char *params = NULL;

        proc = peer_exec_shell (p, "exec cat /dev/zero", 7, NULL, NULL);
        peer_credit (p, 7, G_MAXUINT32);
        peer_credit (p, 7, G_MAXUINT32);
        g_usleep (1500000);
        assert_small (p);
        params = g_strdup_printf ("{\"proc\":%" G_GUINT64_FORMAT ",\"signal\":9}", proc);
        id = peer_request (p, "exec.kill", params);
        g_assert_true (peer_collect_exec (p, 7, &r, peer_timeout (20000)));
        g_assert_cmpint (num (r.exit, "signal"), ==, 9);
        g_assert_cmpuint (r.out->len, >, 1024 * 1024);
        ok (p, id);
        exec_result_clear (&r);
        assert_small (p);
        finish (p);
}

/* exec happy paths ---------------------------------------------------------------------------- */

static void
run_shell (AgentPeer *p, const char *shell, const char *extra, ExecResult *r)
{
        static guint32 channel = 100;

        channel++;
        peer_exec_shell (p, shell, channel, extra, NULL);
        g_assert_true (peer_collect_exec (p, channel, r, peer_timeout (10000)));
}

static void
test_exec_basic (void)
{
        AgentPeer *p = start ();
        ExecResult r = { 0 };
        g_autofree char *tmp = g_dir_make_tmp ("corral-agent-XXXXXX", NULL);
        g_autofree char *extra =
                g_strdup_printf ("\"cwd\":\"%s\",\"env\":{\"FOO\":\"bar baz\"}", tmp);
        g_autofree char *expect = NULL;
        guint64 id;

        run_shell (p, "echo out; echo err >&2; exit 3", NULL, &r);
        g_assert_cmpstr (r.out->str, ==, "out\n");
        g_assert_cmpstr (r.err->str, ==, "err\n");
        g_assert_cmpint (r.eofs, ==, 2);
        g_assert_cmpint (num (r.exit, "code"), ==, 3);
        g_assert_null (cJSON_GetObjectItemCaseSensitive (r.exit, "timed_out"));
        exec_result_clear (&r);

        run_shell (p, "printf '%s|%s|%s|%s|' \"$FOO\" \"$PATH\" \"$LANG\" \"$SHELL\"; pwd", extra,
                   &r);
        expect = g_strdup_printf (
                "bar baz|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
                "|C.UTF-8|/bin/sh|%s\n",
                tmp);
        g_assert_cmpstr (r.out->str, ==, expect);
        exec_result_clear (&r);

        /* Nothing of the agent leaks into the child: only fds 0-2 are open. */
        run_shell (p, "ls /proc/self/fd | wc -l", NULL, &r);
        g_assert_cmpstr (g_strstrip (r.out->str), ==, "4"); /* 0, 1, 2 and ls's own dir fd */
        exec_result_clear (&r);

        /* valgrind refuses a child's setrlimit (RLIMIT_NOFILE) before exec. */
        if (!peer_wrapped ()) {
                run_shell (p, "ulimit -n; ulimit -t", "\"rlimits\":{\"nofile\":10,\"cpu\":5}", &r);
                g_assert_cmpstr (r.out->str, ==, "10\n5\n");
                exec_result_clear (&r);
        }

        /* The leader exits, a group member keeps the output open: the timeout still applies. */
        run_shell (p, "sleep 30 & exit 0", "\"timeout_ms\":300", &r);
        g_assert_cmpint (num (r.exit, "code"), ==, 0);
        g_assert_true (cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (r.exit, "timed_out")));
        exec_result_clear (&r);

        run_shell (p, "kill -9 $$", NULL, &r);
        g_assert_cmpint (num (r.exit, "signal"), ==, 9);
        exec_result_clear (&r);

        id = peer_request (p, "exec.start", "{\"argv\":[\"/nonexistent/program\"],\"channel\":50}");
        peer_assert_error (p, id, "not-found");
        id = peer_request (p, "exec.start",
                           "{\"argv\":[\"true\"],\"channel\":51,\"cwd\":\"/nonexistent/dir\"}");
        peer_assert_error (p, id, "not-found");
        /* PATH is searched with the command's own PATH, not the agent's. */
        id = peer_request (p, "exec.start", "{\"argv\":[\"no-such-program-x\"],\"channel\":52}");
        peer_assert_error (p, id, "not-found");
        id = peer_request (
                p, "exec.start",
                "{\"argv\":[\"true\"],\"channel\":53,\"env\":{\"PATH\":\"/nonexistent\"}}");
        peer_assert_error (p, id, "not-found");
        /* The failed starts left no channel behind. */
        id = peer_request (p, "exec.start", "{\"argv\":[\"true\"],\"channel\":50}");
        ok (p, id);
        g_assert_true (peer_collect_exec (p, 50, &r, peer_timeout (5000)));
        exec_result_clear (&r);
        g_rmdir (tmp);
        finish (p);
}

static void
test_exec_stdin (void)
{
        AgentPeer *p = start ();
        ExecResult r = { 0 };

        peer_exec_shell (p, "cat; echo done", 20, "\"stdin\":true", NULL);
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 20, "hello ", 6);
        peer_send_frame (p, PROTO_FRAME_DATA, PROTO_DATA_EOF, 20, "world\n", 6);
        g_assert_true (peer_collect_exec (p, 20, &r, peer_timeout (5000)));
        g_assert_cmpstr (r.out->str, ==, "hello world\ndone\n");
        g_assert_cmpint (num (r.exit, "code"), ==, 0);
        exec_result_clear (&r);

        /* Without stdin the child reads /dev/null. */
        run_shell (p, "cat; echo end", NULL, &r);
        g_assert_cmpstr (r.out->str, ==, "end\n");
        exec_result_clear (&r);
        finish (p);
}

static gboolean
is_credit (const PeerFrame *f, gconstpointer data)
{
        return f->type == PROTO_FRAME_CREDIT && f->channel == GPOINTER_TO_UINT (data);
}

static void
test_exec_stdin_credit (void)
{
        AgentPeer *p = start ();
        g_autofree char *chunk = g_malloc0 (65536);
        gsize granted = 0;
        PeerFrame *f;

        peer_exec_shell (p, "exec cat >/dev/null", 21, "\"stdin\":true", NULL);
        for (int i = 0; i < 4; i++)
                peer_send_frame (p, PROTO_FRAME_DATA, 0, 21, chunk, 65536);
        while (granted < 4 * 65536 &&
               (f = peer_take (p, is_credit, GUINT_TO_POINTER (21), peer_timeout (5000)))) {
                granted += proto_get_u32 (g_bytes_get_data (f->payload, NULL));
                peer_frame_free (f);
        }
        g_assert_cmpuint (granted, ==, 4 * 65536);
        finish (p);
}

static void
test_exec_timeout_kill (void)
{
        AgentPeer *p = start ();
        ExecResult r = { 0 };
        gint64 t0 = g_get_monotonic_time ();
        guint64 proc, id;
        g_autofree char *params = NULL;

        run_shell (p, "sleep 30", "\"timeout_ms\":300", &r);
        g_assert_cmpint (num (r.exit, "signal"), ==, SIGKILL);
        g_assert_true (cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (r.exit, "timed_out")));
        g_assert_cmpint (g_get_monotonic_time () - t0, <, (gint64) peer_timeout (5000) * 1000);
        exec_result_clear (&r);

        proc = peer_exec_shell (p, "exec sleep 30", 30, NULL, NULL);
        params = g_strdup_printf ("{\"proc\":%" G_GUINT64_FORMAT ",\"signal\":%d}", proc, SIGUSR1);
        id = peer_request (p, "exec.kill", params);
        ok (p, id);
        g_assert_true (peer_collect_exec (p, 30, &r, peer_timeout (5000)));
        g_assert_cmpint (num (r.exit, "signal"), ==, SIGUSR1);
        exec_result_clear (&r);
        finish (p);
}

static void
test_exec_pty (void)
{
        AgentPeer *p = start ();
        ExecResult r = { 0 };

        run_shell (p, "tty; stty size; test -t 0 && echo interactive",
                   "\"pty\":{\"rows\":33,\"cols\":77}", &r);
        g_assert_true (g_str_has_prefix (r.out->str, "/dev/pts/"));
        g_assert_nonnull (strstr (r.out->str, "33 77\r\n"));
        g_assert_nonnull (strstr (r.out->str, "interactive"));
        g_assert_cmpint (r.eofs, ==, 1);
        g_assert_cmpuint (r.err->len, ==, 0);
        g_assert_cmpint (num (r.exit, "code"), ==, 0);
        exec_result_clear (&r);

        /* Resize, then let the shell look. */
        {
                guint64 proc = peer_exec_shell (p, "read x; stty size", 41,
                                                "\"pty\":{\"rows\":24,\"cols\":80}", NULL);
                g_autofree char *params = g_strdup_printf (
                        "{\"proc\":%" G_GUINT64_FORMAT ",\"rows\":40,\"cols\":100}", proc);

                ok (p, peer_request (p, "exec.resize", params));
                peer_send_frame (p, PROTO_FRAME_DATA, 0, 41, "\n", 1);
                g_assert_true (peer_collect_exec (p, 41, &r, peer_timeout (5000)));
                g_assert_nonnull (strstr (r.out->str, "40 100"));
                exec_result_clear (&r);
        }

        /* Input goes to the terminal. */
        peer_exec_shell (p, "read line; echo got:$line", 40, "\"pty\":{\"rows\":24,\"cols\":80}",
                         NULL);
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 40, "abc\n", 4);
        g_assert_true (peer_collect_exec (p, 40, &r, peer_timeout (5000)));
        g_assert_nonnull (strstr (r.out->str, "got:abc"));
        exec_result_clear (&r);
        finish (p);
}

static const cJSON *
find_proc (const cJSON *list, guint64 proc)
{
        const cJSON *procs, *item;

        g_assert_cmpint (proto_json_get_array (list, "procs", 0, &procs), ==, 0);
        cJSON_ArrayForEach (item, procs)
                if (num (item, "proc") == (int64_t) proc)
                        return item;
        return NULL;
}

/* A process that ends detached stays listed until an attachment has seen its end. */
static void
test_exec_detach_attach (void)
{
        AgentPeer *p = start ();
        ExecResult r = { 0 };
        g_autofree char *params = NULL;
        const cJSON *item;
        cJSON *root, *res;
        guint64 proc;

        proc = peer_exec_shell (p, "echo a; sleep 0.3; echo b >&2", 70, NULL, NULL);
        params = g_strdup_printf ("{\"proc\":%" G_GUINT64_FORMAT "}", proc);
        ok (p, peer_request (p, "exec.detach", params));
        g_usleep (800000);
        res = peer_result (p, peer_request (p, "exec.list", NULL), &root);
        item = find_proc (res, proc);
        peer_require (item);
        g_assert_false (cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (item, "running")));
        g_assert_cmpint (num (item, "code"), ==, 0);
        g_assert_cmpstr (str (item, "shell"), ==, "echo a; sleep 0.3; echo b >&2");
        cJSON_Delete (root);

        g_free (params);
        params = g_strdup_printf ("{\"proc\":%" G_GUINT64_FORMAT ",\"channel\":71}", proc);
        ok (p, peer_request (p, "exec.attach", params));
        g_assert_true (peer_collect_exec (p, 71, &r, peer_timeout (5000)));
        g_assert_cmpstr (r.out->str, ==, "a\n");
        g_assert_cmpstr (r.err->str, ==, "b\n");
        g_assert_cmpint (r.eofs, ==, 2);
        g_assert_cmpint (num (r.exit, "code"), ==, 0);
        exec_result_clear (&r);

        res = peer_result (p, peer_request (p, "exec.list", NULL), &root);
        g_assert_null (find_proc (res, proc));
        cJSON_Delete (root);
        finish (p);
}

static void
test_wait_log (void)
{
        AgentPeer *p = start ();
        guint64 proc, id;
        g_autofree char *params = NULL;
        cJSON *root, *res;

        proc = peer_exec_shell (p, "echo starting; sleep 0.3; echo ready now; exec sleep 100", 60,
                                "\"background\":true", NULL);
        params = g_strdup_printf (
                "{\"proc\":%" G_GUINT64_FORMAT ",\"regex\":\"^ready\",\"timeout_ms\":5000}", proc);
        id = peer_request (p, "wait.log", params);
        res = peer_result (p, id, &root);
        g_assert_cmpstr (str (res, "line"), ==, "ready now");
        cJSON_Delete (root);

        /* Already in the ring. */
        g_free (params);
        params = g_strdup_printf (
                "{\"proc\":%" G_GUINT64_FORMAT ",\"regex\":\"sta(r)t\",\"timeout_ms\":5000}", proc);
        id = peer_request (p, "wait.log", params);
        res = peer_result (p, id, &root);
        g_assert_cmpstr (str (res, "line"), ==, "starting");
        cJSON_Delete (root);

        g_free (params);
        params = g_strdup_printf (
                "{\"proc\":%" G_GUINT64_FORMAT ",\"regex\":\"never\",\"timeout_ms\":200}", proc);
        id = peer_request (p, "wait.log", params);
        peer_assert_error (p, id, "timeout");

        g_free (params);
        params = g_strdup_printf (
                "{\"proc\":%" G_GUINT64_FORMAT ",\"regex\":\"(a\",\"timeout_ms\":200}", proc);
        id = peer_request (p, "wait.log", params);
        peer_assert_error (p, id, "invalid-request");

        g_free (params);
        params = g_strdup_printf ("{\"proc\":%" G_GUINT64_FORMAT ",\"signal\":9}", proc);
        id = peer_request (p, "exec.kill", params);
        ok (p, id);
        finish (p);
}

static void
test_wait_port (void)
{
        AgentPeer *p = start ();
        struct sockaddr_in sin = { .sin_family = AF_INET,
                                   .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
        socklen_t len = sizeof sin;
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        g_autofree char *params = NULL;
        guint64 id;

        g_assert_cmpint (bind (fd, (struct sockaddr *) &sin, sizeof sin), ==, 0);
        g_assert_cmpint (getsockname (fd, (struct sockaddr *) &sin, &len), ==, 0);
        /* Bound but not listening: refused until the timeout. */
        params = g_strdup_printf ("{\"port\":%d,\"timeout_ms\":300}", ntohs (sin.sin_port));
        id = peer_request (p, "wait.port", params);
        peer_assert_error (p, id, "timeout");

        g_assert_cmpint (listen (fd, 1), ==, 0);
        g_free (params);
        params = g_strdup_printf ("{\"host\":\"127.0.0.1\",\"port\":%d,\"timeout_ms\":5000}",
                                  ntohs (sin.sin_port));
        id = peer_request (p, "wait.port", params);
        ok (p, id);
        close (fd);
        finish (p);
}

/* Files ------------------------------------------------------------------------------------- */

static char *
read_all (AgentPeer *p, const char *path, guint32 channel, const char *extra, int64_t *ret_size)
{
        g_autofree char *params = g_strdup_printf ("{\"path\":\"%s\",\"channel\":%u%s%s}", path,
                                                   channel, extra ? "," : "", extra ? extra : "");
        guint64 id = peer_request (p, "file.read", params);
        GString *out = g_string_new (NULL);
        cJSON *root, *res;

        for (;;) {
                PeerFrame *f =
                        peer_take (p, is_data, GUINT_TO_POINTER (channel), peer_timeout (5000));
                gsize len;
                const char *d;

                peer_require (f);
                g_assert_cmpint (f->flags & 3, ==, 1);
                d = g_bytes_get_data (f->payload, &len);
                g_string_append_len (out, d, (gssize) len);
                if (len > 0)
                        peer_credit (p, channel, (guint32) len);
                if (f->flags & PROTO_DATA_EOF) {
                        peer_frame_free (f);
                        break;
                }
                peer_frame_free (f);
        }
        res = peer_result (p, id, &root);
        *ret_size = num (res, "size");
        cJSON_Delete (root);
        return g_string_free (out, FALSE);
}

static guint64
write_start (AgentPeer *p, const char *path, guint32 channel, const char *mode)
{
        g_autofree char *params = g_strdup_printf (
                "{\"path\":\"%s\",\"channel\":%u,\"mode\":\"%s\"}", path, channel, mode);

        return peer_request (p, "file.write", params);
}

static void
write_file (AgentPeer *p,
            const char *path,
            guint32 channel,
            const char *mode,
            const char *a,
            const char *b)
{
        guint64 id = write_start (p, path, channel, mode);
        cJSON *root, *res;

        peer_send_frame (p, PROTO_FRAME_DATA, 0, channel, a, strlen (a));
        peer_send_frame (p, PROTO_FRAME_DATA, PROTO_DATA_EOF, channel, b, strlen (b));
        res = peer_result (p, id, &root);
        g_assert_cmpint (num (res, "size"), ==, (int64_t) (strlen (a) + strlen (b)));
        cJSON_Delete (root);
}

static guint64 req_path (AgentPeer *p, const char *method, const char *fmt, ...)
        G_GNUC_PRINTF (3, 4);

static guint64
req_path (AgentPeer *p, const char *method, const char *fmt, ...)
{
        va_list ap;
        g_autofree char *params = NULL;

        va_start (ap, fmt);
        params = g_strdup_vprintf (fmt, ap);
        va_end (ap);
        return peer_request (p, method, params);
}

static guint
count_entries (const char *dir)
{
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        guint n = 0;

        while (d && g_dir_read_name (d))
                n++;
        return n;
}

static void
test_file_roundtrip (void)
{
        AgentPeer *p = start ();
        g_autofree char *tmp = g_dir_make_tmp ("corral-agent-XXXXXX", NULL);
        g_autofree char *a = g_build_filename (tmp, "a.txt", NULL);
        g_autofree char *d = g_build_filename (tmp, "d", NULL);
        g_autofree char *deep = g_build_filename (tmp, "d", "e", "f", NULL);
        g_autofree char *b = g_build_filename (tmp, "d", "b.txt", NULL);
        g_autofree char *content = NULL, *got = NULL;
        int64_t size;
        guint64 id;
        cJSON *root, *res;
        const cJSON *entries;

        write_file (p, a, 11, "replace", "hello ", "world");
        g_assert_true (g_file_get_contents (a, &content, NULL, NULL));
        g_assert_cmpstr (content, ==, "hello world");
        g_assert_cmpuint (count_entries (tmp), ==, 1); /* no temporary file left */

        got = read_all (p, a, 12, NULL, &size);
        g_assert_cmpstr (got, ==, "hello world");
        g_assert_cmpint (size, ==, 11);
        g_free (got);
        got = read_all (p, a, 13, "\"offset\":6,\"length\":3", &size);
        g_assert_cmpstr (got, ==, "wor");
        g_assert_cmpint (size, ==, 3);

        write_file (p, a, 14, "append", "!", "?");
        g_free (content);
        g_assert_true (g_file_get_contents (a, &content, NULL, NULL));
        g_assert_cmpstr (content, ==, "hello world!?");

        id = req_path (p, "file.stat", "{\"path\":\"%s\"}", a);
        res = peer_result (p, id, &root);
        g_assert_cmpstr (str (res, "type"), ==, "file");
        g_assert_cmpint (num (res, "size"), ==, 13);
        g_assert_cmpint (num (res, "mode"), ==, 0644);
        cJSON_Delete (root);

        id = req_path (p, "file.mkdir", "{\"path\":\"%s\",\"parents\":true}", deep);
        ok (p, id);
        g_assert_true (g_file_test (deep, G_FILE_TEST_IS_DIR));
        id = req_path (p, "file.mkdir", "{\"path\":\"%s\"}", deep);
        peer_assert_error (p, id, "exists");

        id = req_path (p, "file.list", "{\"path\":\"%s\"}", tmp);
        res = peer_result (p, id, &root);
        g_assert_cmpint (proto_json_get_array (res, "entries", 0, &entries), ==, 0);
        g_assert_cmpint (cJSON_GetArraySize (entries), ==, 2);
        g_assert_false (cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (res, "truncated")));
        cJSON_Delete (root);

        id = req_path (p, "file.move", "{\"from\":\"%s\",\"to\":\"%s\"}", a, b);
        ok (p, id);
        write_file (p, a, 15, "replace", "new", "");
        id = req_path (p, "file.move", "{\"from\":\"%s\",\"to\":\"%s\"}", a, b);
        peer_assert_error (p, id, "exists");
        id = req_path (p, "file.move", "{\"from\":\"%s\",\"to\":\"%s\",\"overwrite\":true}", a, b);
        ok (p, id);

        id = req_path (p, "file.remove", "{\"path\":\"%s\"}", d);
        peer_assert_error (p, id, "exists"); /* not empty */
        id = req_path (p, "file.remove", "{\"path\":\"%s\",\"recursive\":true}", d);
        ok (p, id);
        g_assert_false (g_file_test (d, G_FILE_TEST_EXISTS));
        g_assert_cmpuint (count_entries (tmp), ==, 0);
        g_rmdir (tmp);
        finish (p);
}

/* A FIFO must not hang the agent, for reading or writing. */
static void
test_file_fifo (void)
{
        AgentPeer *p = start ();
        g_autofree char *tmp = g_dir_make_tmp ("corral-agent-XXXXXX", NULL);
        g_autofree char *fifo = g_build_filename (tmp, "fifo", NULL);
        guint64 id;

        g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
        id = req_path (p, "file.read", "{\"path\":\"%s\",\"channel\":1}", fifo);
        peer_assert_error (p, id, "invalid-request");
        id = write_start (p, fifo, 2, "append");
        peer_assert_error (p, id, "invalid-request");
        id = write_start (p, fifo, 3, "replace");
        peer_assert_error (p, id, "invalid-request");
        id = req_path (p, "file.read", "{\"path\":\"%s\",\"channel\":4}", tmp);
        peer_assert_error (p, id, "io"); /* EISDIR */
        peer_assert_pong (p);
        g_unlink (fifo);
        g_rmdir (tmp);
        finish (p);
}

static void
test_file_read_credit (void)
{
        AgentPeer *p = start ();
        g_autofree char *tmp = g_dir_make_tmp ("corral-agent-XXXXXX", NULL);
        g_autofree char *path = g_build_filename (tmp, "big", NULL);
        /* Larger than the window, so the agent must stop and wait for credit. */
        const gsize size_total = PROTO_DEFAULT_WINDOW + 600000;
        g_autofree char *data = g_malloc (size_total);
        g_autofree char *got = NULL;
        gsize before = 0;
        int64_t size;
        PeerFrame *f;
        guint64 id;
        cJSON *root;

        for (gsize i = 0; i < size_total; i++)
                data[i] = (char) (i % 251);
        g_assert_true (g_file_set_contents (path, data, (gssize) size_total, NULL));
        id = req_path (p, "file.read", "{\"path\":\"%s\",\"channel\":7}", path);
        while ((f = peer_take (p, is_data, GUINT_TO_POINTER (7), 500))) {
                before += g_bytes_get_size (f->payload);
                peer_frame_free (f);
        }
        g_assert_cmpuint (before, ==, PROTO_DEFAULT_WINDOW);
        peer_credit (p, 7, 600000);
        while ((f = peer_take (p, is_data, GUINT_TO_POINTER (7), peer_timeout (5000)))) {
                gboolean eof = (f->flags & PROTO_DATA_EOF) != 0;

                before += g_bytes_get_size (f->payload);
                peer_frame_free (f);
                if (eof)
                        break;
        }
        g_assert_cmpuint (before, ==, size_total);
        g_assert_cmpint (num (peer_result (p, id, &root), "size"), ==, (int64_t) size_total);
        cJSON_Delete (root);
        {
                g_autofree char *offset =
                        g_strdup_printf ("\"offset\":%" G_GSIZE_FORMAT, size_total - 10);

                got = read_all (p, path, 8, offset, &size);
        }
        g_assert_cmpint (size, ==, 10);
        g_assert_cmpmem (got, 10, data + size_total - 10, 10);
        g_unlink (path);
        g_rmdir (tmp);
        finish (p);
}

/* An unfinished replace never touches the target. */
static void
test_file_write_aborted (void)
{
        /* A window smaller than a frame, so one frame can exceed it. */
        const char *const args[] = { "--window", "65536", NULL };
        AgentPeer *p = peer_spawn (args, TRUE);

        cJSON_Delete (peer_hello (p));
        g_autofree char *tmp = g_dir_make_tmp ("corral-agent-XXXXXX", NULL);
        g_autofree char *path = g_build_filename (tmp, "target", NULL);
        g_autofree char *content = NULL;
        guint64 id;

        g_assert_true (g_file_set_contents (path, "old", -1, NULL));
        id = write_start (p, path, 21, "replace");
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 21, "new content", 11);
        peer_send_frame (p, PROTO_FRAME_CLOSE, 0, 21, NULL, 0);
        peer_assert_error (p, id, "io");
        g_assert_true (g_file_get_contents (path, &content, NULL, NULL));
        g_assert_cmpstr (content, ==, "old");
        g_assert_cmpuint (count_entries (tmp), ==, 1);

        /* Beyond credit: the same. */
        id = write_start (p, path, 22, "replace");
        {
                g_autofree char *big = g_malloc0 (65537);

                peer_send_frame (p, PROTO_FRAME_DATA, 0, 22, big, 65537);
        }
        peer_assert_error (p, id, "io");
        g_assert_cmpuint (count_entries (tmp), ==, 1);

        /* The session ends before EOF. */
        write_start (p, path, 23, "replace");
        peer_send_frame (p, PROTO_FRAME_DATA, 0, 23, "partial", 7);
        peer_assert_pong (p);
        /* The partial content lives in an unnamed O_TMPFILE inode: nothing to leave behind if
         * the agent dies now. */
        g_assert_cmpuint (count_entries (tmp), ==, 1);
        cJSON_Delete (peer_hello (p));
        peer_assert_pong (p);
        g_free (content);
        g_assert_true (g_file_get_contents (path, &content, NULL, NULL));
        g_assert_cmpstr (content, ==, "old");
        g_assert_cmpuint (count_entries (tmp), ==, 1);
        g_unlink (path);
        g_rmdir (tmp);
        finish (p);
}

/* Recursive removal deletes a symlink, never what it points to. */
static void
test_file_remove_symlink (void)
{
        AgentPeer *p = start ();
        g_autofree char *tmp = g_dir_make_tmp ("corral-agent-XXXXXX", NULL);
        g_autofree char *outside = g_build_filename (tmp, "outside", NULL);
        g_autofree char *keep = g_build_filename (tmp, "outside", "keep.txt", NULL);
        g_autofree char *victim = g_build_filename (tmp, "victim", NULL);
        g_autofree char *sub = g_build_filename (tmp, "victim", "sub", NULL);
        g_autofree char *link1 = g_build_filename (tmp, "victim", "link", NULL);
        g_autofree char *link2 = g_build_filename (tmp, "victim", "sub", "abs", NULL);
        guint64 id;

        g_assert_cmpint (g_mkdir_with_parents (outside, 0755), ==, 0);
        g_assert_cmpint (g_mkdir_with_parents (sub, 0755), ==, 0);
        g_assert_true (g_file_set_contents (keep, "keep", -1, NULL));
        g_assert_cmpint (symlink ("../outside", link1), ==, 0);
        g_assert_cmpint (symlink (outside, link2), ==, 0);
        id = req_path (p, "file.remove", "{\"path\":\"%s\",\"recursive\":true}", victim);
        ok (p, id);
        g_assert_false (g_file_test (victim, G_FILE_TEST_EXISTS));
        g_assert_true (g_file_test (keep, G_FILE_TEST_IS_REGULAR));
        g_unlink (keep);
        g_rmdir (outside);
        g_rmdir (tmp);
        finish (p);
}

static gboolean
is_watch_event (const PeerFrame *f, gconstpointer data)
{
        g_autoptr (cJSON) obj = NULL;
        const cJSON *params;
        const char *path, *kind;

        if (f->type != PROTO_FRAME_EVENT ||
            proto_json_parse (g_bytes_get_data (f->payload, NULL), g_bytes_get_size (f->payload),
                              &obj) < 0 ||
            proto_json_get_object (obj, "params", &params) < 0 ||
            proto_json_get_string (params, "path", 0, &path) < 0 ||
            proto_json_get_string (params, "kind", 0, &kind) < 0)
                return FALSE;
        /* g_file_set_contents() creates a temporary file and renames it into place. */
        return (strcmp (kind, "create") == 0 || strcmp (kind, "move-to") == 0) &&
               strcmp (path, data) == 0;
}

static void
test_watch (void)
{
        AgentPeer *p = start ();
        g_autofree char *tmp = g_dir_make_tmp ("corral-agent-XXXXXX", NULL);
        g_autofree char *sub = g_build_filename (tmp, "sub", NULL);
        g_autofree char *file = g_build_filename (tmp, "sub", "x", NULL);
        g_autofree char *params = NULL;
        guint64 id;
        cJSON *root;
        PeerFrame *f;
        int64_t w;

        id = req_path (p, "watch.start", "{\"path\":\"%s\"}", tmp);
        w = num (peer_result (p, id, &root), "watch");
        cJSON_Delete (root);
        g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
        f = peer_take (p, is_watch_event, sub, peer_timeout (5000));
        peer_require (f);
        peer_frame_free (f);
        /* The new directory is watched too. */
        g_assert_true (g_file_set_contents (file, "x", -1, NULL));
        f = peer_take (p, is_watch_event, file, peer_timeout (5000));
        peer_require (f);
        peer_frame_free (f);
        params = g_strdup_printf ("{\"watch\":%" G_GINT64_FORMAT "}", w);
        id = peer_request (p, "watch.stop", params);
        ok (p, id);
        g_unlink (file);
        g_rmdir (sub);
        g_rmdir (tmp);
        finish (p);
}

/* Users --------------------------------------------------------------------------------------- */

static void
test_default_user_nobody (void)
{
        AgentPeer *p;
        ExecResult r = { 0 };
        struct passwd *nobody;
        g_autofree char *expect = NULL;

        if (getuid () != 0) {
                g_test_skip ("needs root");
                return;
        }
        if (getpwnam ("corral")) {
                g_test_skip ("a user named corral exists");
                return;
        }
        nobody = getpwnam ("nobody");
        g_assert_nonnull (nobody);
        expect = g_strdup_printf ("%u %u\n", nobody->pw_uid, nobody->pw_gid);
        p = peer_spawn (NULL, FALSE);
        cJSON_Delete (peer_hello (p));
        run_shell (p, "echo $(id -u) $(id -g)", NULL, &r);
        g_assert_cmpstr (r.out->str, ==, expect);
        exec_result_clear (&r);
        finish (p);
}

static void
test_user_denied_when_not_root (void)
{
        AgentPeer *p;
        guint64 id;

        if (getuid () == 0) {
                g_test_skip ("needs a non-root user");
                return;
        }
        p = start ();
        id = peer_request (p, "exec.start",
                           "{\"argv\":[\"true\"],\"channel\":1,\"user\":\"root\"}");
        peer_assert_error (p, id, "permission-denied");
        id = peer_request (p, "exec.start", "{\"argv\":[\"true\"],\"channel\":2,\"user\":0}");
        peer_assert_error (p, id, "permission-denied");
        finish (p);
}

/* system.poweroff signals PID 1: an agent that a VM's init did not start (with
 * --allow-poweroff) refuses, so a test or a local agent never powers its machine off. */
static void
test_poweroff_refused_without_flag (void)
{
        AgentPeer *p = start ();
        guint64 id;

        id = peer_request (p, "system.poweroff", NULL);
        peer_assert_error (p, id, "permission-denied");
        /* Still serving. */
        cJSON_Delete (peer_hello (p));
        peer_assert_pong (p);
        finish (p);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);

        g_test_add_func ("/agent/hello", test_hello);
        g_test_add_func ("/agent/hello/before-hello-ignored", test_before_hello_ignored);
        g_test_add_func ("/agent/hello/unsupported-version", test_hello_unsupported_version);
        g_test_add_func ("/agent/hello/invalid-ignored", test_hello_invalid_ignored);
        g_test_add_func ("/agent/hello/second-hello", test_second_hello);
        g_test_add_func ("/agent/frame-length/zero", test_length_zero);
        g_test_add_func ("/agent/frame-length/max", test_length_max);
        g_test_add_func ("/agent/frame-length/max-plus-one", test_length_max_plus_one);
        g_test_add_func ("/agent/frame-length/all-ones", test_length_all_ones);
        g_test_add_func ("/agent/input/garbage-resync", test_garbage_resync);
        g_test_add_func ("/agent/input/truncated-frame", test_truncated_frame);
        g_test_add_func ("/agent/input/invalid-utf8", test_invalid_utf8);
        g_test_add_func ("/agent/input/deep-nesting", test_deep_nesting);
        g_test_add_func ("/agent/input/huge-json", test_huge_json);
        g_test_add_func ("/agent/input/unknown-method", test_unknown_method);
        g_test_add_func ("/agent/input/wrong-types", test_wrong_types);
        g_test_add_func ("/agent/channel/data-beyond-credit", test_data_beyond_credit);
        g_test_add_func ("/agent/channel/data-unknown-channel", test_data_unknown_channel);
        g_test_add_func ("/agent/channel/exec-credit", test_exec_credit);
        g_test_add_func ("/agent/channel/outq-bounded", test_outq_bounded);
        g_test_add_func ("/agent/exec/basic", test_exec_basic);
        g_test_add_func ("/agent/exec/stdin", test_exec_stdin);
        g_test_add_func ("/agent/exec/stdin-credit", test_exec_stdin_credit);
        g_test_add_func ("/agent/exec/timeout-kill", test_exec_timeout_kill);
        g_test_add_func ("/agent/exec/pty", test_exec_pty);
        g_test_add_func ("/agent/exec/detach-attach", test_exec_detach_attach);
        g_test_add_func ("/agent/wait/log", test_wait_log);
        g_test_add_func ("/agent/wait/port", test_wait_port);
        g_test_add_func ("/agent/file/roundtrip", test_file_roundtrip);
        g_test_add_func ("/agent/file/fifo", test_file_fifo);
        g_test_add_func ("/agent/file/read-credit", test_file_read_credit);
        g_test_add_func ("/agent/file/write-aborted", test_file_write_aborted);
        g_test_add_func ("/agent/file/remove-symlink", test_file_remove_symlink);
        g_test_add_func ("/agent/watch/recursive", test_watch);
        g_test_add_func ("/agent/user/default-nobody", test_default_user_nobody);
        g_test_add_func ("/agent/user/denied-when-not-root", test_user_denied_when_not_root);
        g_test_add_func ("/agent/system/poweroff-refused", test_poweroff_refused_without_flag);
        return g_test_run ();
}
