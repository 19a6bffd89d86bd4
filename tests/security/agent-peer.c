/* agent-peer.c — see agent-peer.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent-peer.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

gboolean
peer_wrapped (void)
{
        const char *w = g_getenv ("CORRAL_AGENT_WRAPPER");

        return w && w[0];
}

int
peer_timeout (int ms)
{
        return peer_wrapped () ? ms * 20 : ms;
}

AgentPeer *
peer_spawn (const char *const *extra, gboolean with_user)
{
        const char *path = g_getenv ("CORRAL_AGENT_PATH");
        const char *wrapper = g_getenv ("CORRAL_AGENT_WRAPPER");
        g_autoptr (GPtrArray) args = g_ptr_array_new_with_free_func (g_free);
        AgentPeer *p = g_new0 (AgentPeer, 1);
        int sv[2];

        g_assert_nonnull (path);
        if (wrapper && wrapper[0]) {
                g_auto (GStrv) w = NULL;

                g_assert_true (g_shell_parse_argv (wrapper, NULL, &w, NULL));
                for (char **s = w; *s; s++)
                        g_ptr_array_add (args, g_strdup (*s));
        }
        g_ptr_array_add (args, g_strdup (path));
        g_ptr_array_add (args, g_strdup ("--fd"));
        g_ptr_array_add (args, g_strdup ("3"));
        if (with_user) {
                g_ptr_array_add (args, g_strdup ("--user"));
                g_ptr_array_add (args, g_strdup (g_get_user_name ()));
        }
        if (g_strcmp0 (g_getenv ("CORRAL_AGENT_VERBOSE"), "1") == 0)
                g_ptr_array_add (args, g_strdup ("--verbose"));
        for (; extra && *extra; extra++)
                g_ptr_array_add (args, g_strdup (*extra));
        g_ptr_array_add (args, NULL);

        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        p->pid = fork ();
        g_assert_cmpint (p->pid, >=, 0);
        if (p->pid == 0) {
                if (dup2 (sv[1], 3) < 0)
                        _exit (126);
                execvp (args->pdata[0], (char **) args->pdata);
                _exit (127);
        }
        close (sv[1]);
        p->fd = sv[0];
        g_assert_cmpint (proto_decoder_init (&p->dec, 0), ==, 0);
        g_queue_init (&p->pending);
        p->next_id = 1;
        return p;
}

void
peer_frame_free (PeerFrame *f)
{
        if (!f)
                return;
        g_bytes_unref (f->payload);
        g_free (f);
}

gboolean
peer_alive (AgentPeer *p)
{
        int status;

        return waitpid (p->pid, &status, WNOHANG) == 0;
}

long
peer_rss_kb (AgentPeer *p)
{
        g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) p->pid);
        g_autofree char *text = NULL;
        const char *line;

        if (!g_file_get_contents (path, &text, NULL, NULL))
                return -1;
        line = strstr (text, "VmRSS:");
        return line ? strtol (line + 6, NULL, 10) : -1;
}

int
peer_finish (AgentPeer *p)
{
        int status = -1;
        gint64 deadline = g_get_monotonic_time () + (gint64) peer_timeout (5000) * 1000;

        close (p->fd);
        for (;;) {
                pid_t r = waitpid (p->pid, &status, WNOHANG);

                if (r == p->pid)
                        break;
                if (g_get_monotonic_time () > deadline) {
                        kill (p->pid, SIGKILL);
                        waitpid (p->pid, &status, 0);
                        g_test_message ("agent did not exit on end of stream");
                        status = -1;
                        break;
                }
                g_usleep (10000);
        }
        g_queue_clear_full (&p->pending, (GDestroyNotify) peer_frame_free);
        proto_decoder_clear (&p->dec);
        g_free (p);
        return status;
}

void
peer_send_raw (AgentPeer *p, const void *data, gsize len)
{
        const guint8 *d = data;

        while (len > 0) {
                ssize_t n = send (p->fd, d, len, MSG_NOSIGNAL);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        /* Blocking socket: cannot happen; keep the loop honest anyway. */
                        g_usleep (1000);
                        continue;
                }
                g_assert_cmpint (n, >, 0);
                d += n;
                len -= (gsize) n;
        }
}

void
peer_send_frame (
        AgentPeer *p, guint8 type, guint8 flags, guint32 channel, const void *payload, gsize len)
{
        guint8 hdr[PROTO_HEADER_SIZE];

        /* Raw encoding on purpose: tests also send what proto_frame_build would refuse. */
        proto_header_encode (hdr, type, flags, channel, (guint32) len);
        peer_send_raw (p, hdr, sizeof hdr);
        if (len > 0)
                peer_send_raw (p, payload, len);
}

void
peer_send_text (AgentPeer *p, guint8 type, const char *json)
{
        peer_send_frame (p, type, 0, 0, json, strlen (json));
}

guint64
peer_request (AgentPeer *p, const char *method, const char *params_json)
{
        guint64 id = p->next_id++;
        g_autofree char *text =
                g_strdup_printf ("{\"id\":%" G_GUINT64_FORMAT ",\"method\":\"%s\",\"params\":%s}",
                                 id, method, params_json ? params_json : "{}");

        peer_send_text (p, PROTO_FRAME_REQUEST, text);
        return id;
}

void
peer_credit (AgentPeer *p, guint32 channel, guint32 n)
{
        guint8 b[4];

        proto_put_u32 (b, n);
        peer_send_frame (p, PROTO_FRAME_CREDIT, 0, channel, b, 4);
}

/* Reads one frame from the socket into the pending queue; FALSE on timeout or EOF. */
static gboolean
read_one (AgentPeer *p, gint64 deadline)
{
        for (;;) {
                ProtoFrame f;
                int r = proto_decoder_next (&p->dec, &f);
                struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
                gint64 left;
                size_t room;
                guint8 *space;
                ssize_t n;

                g_assert_cmpint (r, >=, 0); /* the agent never sends a malformed frame */
                if (r == 1) {
                        PeerFrame *pf = g_new0 (PeerFrame, 1);

                        pf->type = f.type;
                        pf->flags = f.flags;
                        pf->channel = f.channel;
                        pf->payload = g_bytes_new (f.payload, f.length);
                        g_queue_push_tail (&p->pending, pf);
                        return TRUE;
                }
                if (p->eof)
                        return FALSE;
                left = (deadline - g_get_monotonic_time ()) / 1000;
                if (left <= 0 || poll (&pfd, 1, (int) left) <= 0)
                        return FALSE;
                space = proto_decoder_space (&p->dec, &room);
                n = read (p->fd, space, room);
                if (n <= 0) {
                        p->eof = TRUE;
                        return FALSE;
                }
                proto_decoder_commit (&p->dec, (size_t) n);
        }
}

PeerFrame *
peer_take (AgentPeer *p, PeerMatch match, gconstpointer data, int timeout_ms)
{
        gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
        guint checked = 0;

        for (;;) {
                for (GList *l = g_queue_peek_nth_link (&p->pending, checked); l; l = l->next) {
                        checked++;
                        if (!match || match (l->data, data)) {
                                PeerFrame *f = l->data;

                                g_queue_delete_link (&p->pending, l);
                                return f;
                        }
                }
                checked = g_queue_get_length (&p->pending);
                if (!read_one (p, deadline))
                        return NULL;
        }
}

PeerFrame *
peer_any (AgentPeer *p, int timeout_ms)
{
        return peer_take (p, NULL, NULL, timeout_ms);
}

static cJSON *
parse (const PeerFrame *f)
{
        gsize len;
        const guint8 *d = g_bytes_get_data (f->payload, &len);
        cJSON *obj = NULL;

        g_assert_cmpint (proto_json_parse (d, len, &obj), ==, 0);
        return obj;
}

static gboolean
is_hello (const PeerFrame *f, gconstpointer data)
{
        return f->type == PROTO_FRAME_HELLO;
}

cJSON *
peer_hello (AgentPeer *p)
{
        char nonce[PROTO_NONCE_HEX_LEN + 1];
        g_autofree char *text = NULL;
        const char *echoed;
        PeerFrame *f;
        cJSON *obj;

        g_assert_cmpint (proto_random_hex (nonce, PROTO_NONCE_HEX_LEN / 2), ==, 0);
        text = g_strdup_printf (
                "{\"version\":1,\"min_version\":1,\"role\":\"host\",\"nonce\":\"%s\"}", nonce);
        peer_send_text (p, PROTO_FRAME_HELLO, text);
        /* Frames of an earlier session may still be queued: skip to the HELLO. */
        f = peer_take (p, is_hello, NULL, peer_timeout (5000));
        peer_require (f);
        obj = parse (f);
        peer_frame_free (f);
        g_assert_cmpint (proto_json_get_string (obj, "nonce", 64, &echoed), ==, 0);
        g_assert_cmpstr (echoed, ==, nonce);
        /* Frames from before this HELLO belong to the old session. */
        g_queue_clear_full (&p->pending, (GDestroyNotify) peer_frame_free);
        return obj;
}

typedef struct {
        gboolean null_id;
        guint64 id;
} IdMatch;

static gboolean
is_response (const PeerFrame *f, gconstpointer data)
{
        const IdMatch *m = data;
        g_autoptr (cJSON) obj = NULL;
        const cJSON *id;

        if (f->type != PROTO_FRAME_RESPONSE)
                return FALSE;
        obj = parse (f);
        id = cJSON_GetObjectItemCaseSensitive (obj, "id");
        if (m->null_id)
                return cJSON_IsNull (id);
        return cJSON_IsNumber (id) && id->valuedouble == (double) m->id;
}

cJSON *
peer_response (AgentPeer *p, guint64 id)
{
        IdMatch m = { FALSE, id };
        PeerFrame *f = peer_take (p, is_response, &m, peer_timeout (5000));
        cJSON *obj;

        if (!f)
                g_error ("no response for request %" G_GUINT64_FORMAT, id);
        obj = parse (f);
        peer_frame_free (f);
        return obj;
}

cJSON *
peer_null_response (AgentPeer *p)
{
        IdMatch m = { TRUE, 0 };
        PeerFrame *f = peer_take (p, is_response, &m, peer_timeout (5000));
        cJSON *obj;

        if (!f)
                g_error ("no response with a null id");
        obj = parse (f);
        peer_frame_free (f);
        return obj;
}

void
peer_assert_error (AgentPeer *p, guint64 id, const char *code)
{
        g_autoptr (cJSON) obj = peer_response (p, id);
        const cJSON *err = cJSON_GetObjectItemCaseSensitive (obj, "error");
        const char *got = NULL;

        if (!err) {
                g_autofree char *text = cJSON_PrintUnformatted (obj);

                g_error ("request %" G_GUINT64_FORMAT ": expected error %s, got %s", id, code,
                         text);
        }
        g_assert_cmpint (proto_json_get_string (err, "code", 64, &got), ==, 0);
        g_assert_cmpstr (got, ==, code);
}

cJSON *
peer_result (AgentPeer *p, guint64 id, cJSON **ret_root)
{
        cJSON *obj = peer_response (p, id);
        cJSON *res = cJSON_GetObjectItemCaseSensitive (obj, "result");

        if (!res) {
                g_autofree char *text = cJSON_PrintUnformatted (obj);

                g_error ("request %" G_GUINT64_FORMAT ": expected a result, got %s", id, text);
        }
        *ret_root = obj;
        return res;
}

static gboolean
is_pong (const PeerFrame *f, gconstpointer data)
{
        gsize len;
        const void *d = g_bytes_get_data (f->payload, &len);

        return f->type == PROTO_FRAME_PONG && len == 8 && memcmp (d, data, 8) == 0;
}

void
peer_assert_pong (AgentPeer *p)
{
        guint8 ping[8];
        PeerFrame *f;

        for (int i = 0; i < 8; i++)
                ping[i] = (guint8) g_random_int ();
        peer_send_frame (p, PROTO_FRAME_PING, 0, 0, ping, sizeof ping);
        f = peer_take (p, is_pong, ping, peer_timeout (5000));
        peer_require (f);
        peer_frame_free (f);
}

static gboolean
is_exec_frame (const PeerFrame *f, gconstpointer data)
{
        guint32 ch = GPOINTER_TO_UINT (data);

        if (f->type == PROTO_FRAME_DATA || f->type == PROTO_FRAME_CLOSE)
                return f->channel == ch;
        if (f->type == PROTO_FRAME_EVENT) {
                g_autoptr (cJSON) obj = parse (f);
                const cJSON *params = cJSON_GetObjectItemCaseSensitive (obj, "params");
                const cJSON *c = cJSON_GetObjectItemCaseSensitive (params, "channel");
                const char *ev = NULL;

                return proto_json_get_string (obj, "event", 64, &ev) == 0 &&
                       strcmp (ev, "exec.exit") == 0 && cJSON_IsNumber (c) &&
                       c->valuedouble == (double) ch;
        }
        return FALSE;
}

gboolean
peer_collect_exec (AgentPeer *p, guint32 channel, ExecResult *res, int timeout_ms)
{
        gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;

        if (!res->out)
                res->out = g_string_new (NULL);
        if (!res->err)
                res->err = g_string_new (NULL);
        while (!res->exit) {
                int left = (int) ((deadline - g_get_monotonic_time ()) / 1000);
                PeerFrame *f =
                        left > 0 ? peer_take (p, is_exec_frame, GUINT_TO_POINTER (channel), left)
                                 : NULL;
                gsize len;
                const char *d;

                if (!f)
                        return FALSE;
                d = g_bytes_get_data (f->payload, &len);
                if (f->type == PROTO_FRAME_DATA) {
                        /* Output after an EOF of the same stream would be a protocol bug. */
                        g_string_append_len ((f->flags & 3) == 2 ? res->err : res->out, d,
                                             (gssize) len);
                        if (f->flags & PROTO_DATA_EOF)
                                res->eofs++;
                        if (len > 0)
                                peer_credit (p, channel, (guint32) len);
                } else if (f->type == PROTO_FRAME_EVENT) {
                        cJSON *obj = parse (f);

                        res->exit = cJSON_DetachItemFromObjectCaseSensitive (obj, "params");
                        cJSON_Delete (obj);
                } else {
                        peer_frame_free (f);
                        return FALSE; /* CLOSE */
                }
                peer_frame_free (f);
        }
        return TRUE;
}

void
exec_result_clear (ExecResult *res)
{
        if (res->out)
                g_string_free (res->out, TRUE);
        if (res->err)
                g_string_free (res->err, TRUE);
        cJSON_Delete (res->exit);
        memset (res, 0, sizeof *res);
}

guint64
peer_exec_shell (
        AgentPeer *p, const char *shell, guint32 channel, const char *extra_params, pid_t *ret_pid)
{
        g_autoptr (cJSON) params = cJSON_CreateObject ();
        g_autofree char *text = NULL;
        cJSON *root, *res;
        guint64 id, proc;
        int64_t v;

        cJSON_AddStringToObject (params, "shell", shell);
        cJSON_AddNumberToObject (params, "channel", channel);
        text = cJSON_PrintUnformatted (params);
        if (extra_params) {
                /* Splice extra members ("k":v,...) into the object. */
                char *joined =
                        g_strdup_printf ("%.*s,%s}", (int) strlen (text) - 1, text, extra_params);

                g_free (text);
                text = joined;
        }
        id = peer_request (p, "exec.start", text);
        res = peer_result (p, id, &root);
        g_assert_cmpint (proto_json_get_int (res, "proc", 1, G_MAXINT32, &v), ==, 0);
        proc = (guint64) v;
        g_assert_cmpint (proto_json_get_int (res, "pid", 1, G_MAXINT32, &v), ==, 0);
        if (ret_pid)
                *ret_pid = (pid_t) v;
        cJSON_Delete (root);
        return proc;
}
