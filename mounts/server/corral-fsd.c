/* corral-fsd — the host file server for one VM's shared folders.
 *
 *   corral-fsd (--fd N | --connect SOCKET) [--share NAME:MODE:PATH]... [--config FILE]
 *              [--control SOCKET] [--audit FILE] [--keep-dir DIR | --no-keep]
 *              [--protect PATTERN]...
 *              [--policy FILE]
 *
 * Serves FS-PROTOCOL.md on the channel (an fd it inherited, or the VM's virtio-serial socket),
 * takes share changes on a control socket (JSON lines: add, remove, set-mode, list, status;
 * stat then approved-delete for what the person approved; undo and keep-all for the person's
 * answer to the change journal --keep-dir holds, fs-journal.h) and keeps
 * the share list in --config so that a restarted server serves the same folders. Exits when
 * the channel closes. --policy reads the organisation's managed policy (corral-policy.h, with
 * its managed.d): its protected and hidden paths apply to every share, like --protect, and a
 * folder or mode it forbids is refused however it is asked for; a damaged policy, or one
 * that does not let this version run, stops the server before it serves anything.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <locale.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "corral-unix.h"
#include "fs-own.h"
#include "fs-server.h"
#include "proto.h"

#define OUT_HIGH (8u << 20) /* stop reading requests above this much queued output */
#define OUT_LOW (1u << 20)
#define MAX_CONTROL_LINE (64u * 1024u)

typedef struct {
        GMainLoop *loop;
        FsServer *server;
        FsAudit *audit;
        char *config_path;
        int fd;
        guint in_source, out_source;
        ProtoDecoder dec;
        GQueue out; /* GBytes */
        size_t out_offset; /* into the head */
        size_t out_bytes;
        char nonce[PROTO_NONCE_HEX_LEN + 1];
        bool established;
        bool paused; /* the reply queue reached OUT_HIGH; requests wait until below OUT_LOW */
        gint64 hello_again_us; /* when the last HELLO a client asked for was sent */
        uint8_t *shm; /* --shm: the region file contents may travel through */
        size_t shm_size;
        int status;
        uint8_t *reply_buf;
} Fsd;

static void pump (Fsd *d);

static void
fsd_quit (Fsd *d, int status)
{
        d->status = status;
        g_clear_handle_id (&d->in_source, g_source_remove);
        g_clear_handle_id (&d->out_source, g_source_remove);
        g_main_loop_quit (d->loop);
}

/* Output -------------------------------------------------------------------------------------- */

static void
queue_frame (Fsd *d, uint8_t type, uint32_t channel, const void *payload, size_t len)
{
        uint8_t *buf = g_malloc (PROTO_HEADER_SIZE + len);

        proto_header_encode (buf, type, 0, channel, (uint32_t) len);
        if (len)
                memcpy (buf + PROTO_HEADER_SIZE, payload, len);
        g_queue_push_tail (&d->out, g_bytes_new_take (buf, PROTO_HEADER_SIZE + len));
        d->out_bytes += PROTO_HEADER_SIZE + len;
}

static gboolean
flush_out (Fsd *d)
{
        while (!g_queue_is_empty (&d->out)) {
                struct iovec iov[64];
                guint n = 0;
                ssize_t w;
                size_t off = d->out_offset;

                for (GList *l = d->out.head; l && n < G_N_ELEMENTS (iov); l = l->next) {
                        gsize size;
                        const uint8_t *data = g_bytes_get_data (l->data, &size);
                        iov[n].iov_base = (void *) (data + off);
                        iov[n].iov_len = size - off;
                        off = 0;
                        n++;
                }
                w = writev (d->fd, iov, (int) n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno == EAGAIN)
                        return TRUE;
                if (w < 0) {
                        g_message ("The file-service channel closed: %s", g_strerror (errno));
                        fsd_quit (d, 0);
                        return FALSE;
                }
                d->out_bytes -= (size_t) w;
                while (w > 0) {
                        gsize size;
                        GBytes *head = g_queue_peek_head (&d->out);
                        size_t left;

                        g_bytes_get_data (head, &size);
                        left = size - d->out_offset;
                        if ((size_t) w < left) {
                                d->out_offset += (size_t) w;
                                w = 0;
                        } else {
                                w -= (ssize_t) left;
                                d->out_offset = 0;
                                g_bytes_unref (g_queue_pop_head (&d->out));
                        }
                }
        }
        return TRUE;
}

static gboolean
on_writable (int fd, GIOCondition cond, gpointer user_data)
{
        Fsd *d = user_data;

        d->out_source = 0;
        pump (d);
        return G_SOURCE_REMOVE;
}

/* Input --------------------------------------------------------------------------------------- */

static void
send_hello (Fsd *d)
{
        g_autofree uint8_t *buf = NULL;
        size_t len;
        cJSON *hello = cJSON_CreateObject ();

        proto_random_hex (d->nonce, PROTO_NONCE_HEX_LEN / 2);
        if (d->shm) {
                /* The client proves it maps the same memory by finding this nonce in it. */
                memset (d->shm, 0, FS_SHM_HEADER);
                memcpy (d->shm, FS_SHM_MAGIC, sizeof FS_SHM_MAGIC);
                memcpy (d->shm + 16, d->nonce, PROTO_NONCE_HEX_LEN);
                cJSON_AddNumberToObject (hello, "shm_size", (double) d->shm_size);
        }
        cJSON_AddNumberToObject (hello, "version", FS_PROTO_VERSION);
        cJSON_AddNumberToObject (hello, "min_version", FS_PROTO_VERSION);
        cJSON_AddStringToObject (hello, "role", "fs-server");
        cJSON_AddStringToObject (hello, "nonce", d->nonce);
        if (proto_frame_build_json (PROTO_FRAME_HELLO, hello, &buf, &len) == 0) {
                g_queue_push_tail (&d->out, g_bytes_new (buf, len));
                d->out_bytes += len;
        }
        cJSON_Delete (hello);
}

/* The guest's client restarted while this server kept running: the HELLO it needs went to the
 * process before it. A fresh session for it (new nonce, the old client's nodes and handles
 * gone), at most once a second whatever the guest sends. */
static void
hello_again (Fsd *d)
{
        gint64 now = g_get_monotonic_time ();

        if (d->hello_again_us && now - d->hello_again_us < G_USEC_PER_SEC)
                return;
        d->hello_again_us = now;
        g_message ("The guest's file client asked for a new session");
        fs_server_reset (d->server);
        d->established = false;
        send_hello (d);
}

static void
handle_hello (Fsd *d, const ProtoFrame *f)
{
        cJSON *obj = NULL;
        const char *role = NULL, *nonce = NULL, *request = NULL;

        if (proto_json_parse (f->payload, f->length, &obj) < 0)
                return;
        if (proto_json_get_string (obj, "role", 32, &role) == 0 &&
            strcmp (role, "fs-client") == 0 &&
            proto_json_get_string (obj, "request", 16, &request) == 0 &&
            strcmp (request, "hello") == 0) {
                cJSON_Delete (obj);
                hello_again (d);
                return;
        }
        if (proto_json_get_string (obj, "role", 32, &role) == 0 &&
            proto_json_get_string (obj, "nonce", PROTO_NONCE_HEX_LEN, &nonce) == 0 &&
            strcmp (role, "fs-client") == 0 && strcmp (nonce, d->nonce) == 0) {
                if (!d->established)
                        g_debug ("file-service client connected");
                d->established = true;
        }
        cJSON_Delete (obj);
}

static void
handle_frame (Fsd *d, const ProtoFrame *f)
{
        FsWriter w;

        switch (f->type) {
        case PROTO_FRAME_HELLO:
                handle_hello (d, f);
                break;
        case PROTO_FRAME_FS_REQUEST:
                if (!d->established)
                        break;
                fs_writer_init (&w, d->reply_buf, PROTO_MAX_PAYLOAD);
                if (fs_server_handle (d->server, f->payload, f->length, &w))
                        queue_frame (d, PROTO_FRAME_FS_REPLY, f->channel, w.buf, w.len);
                break;
        default:
                /* Nothing else is part of this protocol; a stray frame is ignored. */
                break;
        }
}

/* Handles the requests already read, one frame at a time, until the reply queue reaches its
 * bound (rule F11 holds per frame, not per read: one read() can carry hundreds of pipelined
 * requests). The rest stay in the decoder until the guest has read replies.
 * 1: stopped at the bound; 0: every whole frame handled; -1: the guest broke the framing. */
static int
process_input (Fsd *d)
{
        ProtoFrame f;
        int r;

        while ((r = proto_decoder_next (&d->dec, &f)) == 1) {
                handle_frame (d, &f);
                if (d->out_bytes >= OUT_HIGH)
                        return 1;
        }
        if (r < 0) {
                g_warning ("The guest sent a malformed frame (%s); closing the file service",
                           g_strerror (-r));
                fsd_quit (d, 1);
                return -1;
        }
        return 0;
}

static void
set_source (Fsd *d, guint *id, bool want, GIOCondition cond, GUnixFDSourceFunc func)
{
        if (want && !*id)
                *id = g_unix_fd_add (d->fd, cond, func, d);
        else if (!want && *id)
                g_clear_handle_id (id, g_source_remove);
}

static gboolean on_readable (int fd, GIOCondition cond, gpointer user_data);

/* Moves replies out and waiting requests in as far as the bounds allow, then watches the
 * channel for what can continue: writable while replies are queued, readable unless paused.
 * Requests already buffered are handled here, not only when new bytes arrive: a guest that
 * pipelined them may send nothing more until it has their replies. */
static void
pump (Fsd *d)
{
        for (;;) {
                int r;

                if (!flush_out (d))
                        return;
                if (d->out_bytes >= OUT_HIGH)
                        d->paused = true;
                if (d->paused && d->out_bytes >= OUT_LOW)
                        break;
                d->paused = false;
                r = process_input (d);
                if (r < 0)
                        return;
                if (r == 0)
                        break;
        }
        set_source (d, &d->out_source, !g_queue_is_empty (&d->out), G_IO_OUT, on_writable);
        set_source (d, &d->in_source, !d->paused, G_IO_IN | G_IO_HUP | G_IO_ERR, on_readable);
}

static gboolean
on_readable (int fd, GIOCondition cond, gpointer user_data)
{
        Fsd *d = user_data;
        size_t room;
        uint8_t *space = proto_decoder_space (&d->dec, &room);
        ssize_t n;

        if (room == 0) {
                /* Only while whole frames wait for the queue to drain. */
                pump (d);
                return G_SOURCE_CONTINUE;
        }
        n = read (fd, space, room);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return G_SOURCE_CONTINUE;
        if (n <= 0) {
                g_message ("The file-service channel closed%s%s", n < 0 ? ": " : "",
                           n < 0 ? g_strerror (errno) : "");
                fsd_quit (d, 0);
                return G_SOURCE_CONTINUE;
        }
        proto_decoder_commit (&d->dec, (size_t) n);
        pump (d);
        return G_SOURCE_CONTINUE;
}

static void
on_notify (const uint8_t *payload, size_t len, void *user_data)
{
        Fsd *d = user_data;

        if (!d->established)
                return;
        queue_frame (d, PROTO_FRAME_FS_NOTIFY, 0, payload, len);
        pump (d);
}

/* Configuration ------------------------------------------------------------------------------- */

static void
save_config (Fsd *d)
{
        g_autoptr (GError) error = NULL;
        cJSON *root;
        char *text;

        if (!d->config_path)
                return;
        root = fs_server_shares_to_json (d->server);
        text = cJSON_Print (root);
        cJSON_Delete (root);
        if (!g_file_set_contents_full (d->config_path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT,
                                       0600, &error))
                g_warning ("Cannot save the shared folders: %s", error->message);
        cJSON_free (text);
}

static gboolean
add_share (Fsd *d,
           const char *name,
           const char *path,
           const char *mode_text,
           const char *const *protect,
           GError **error)
{
        g_autofree char *default_name = NULL;
        FsMode mode;

        if (!fs_mode_parse (mode_text, &mode)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a sharing mode: use ro, rw or rw-nodelete"),
                             mode_text ? mode_text : "");
                return FALSE;
        }
        if (!name || !*name)
                name = default_name = fs_share_name_for_path (path);
        return fs_server_add_share (d->server, name, path, mode, protect, error);
}

static gboolean
load_config (Fsd *d, GError **error)
{
        g_autofree char *text = NULL;
        gsize len;

        if (!g_file_get_contents (d->config_path, &text, &len, NULL))
                return TRUE; /* nothing shared yet */
        if (!fs_server_load_shares_json (d->server, text, len, error)) {
                g_prefix_error (error, "%s: ", d->config_path);
                return FALSE;
        }
        return TRUE;
}

/* Control socket ------------------------------------------------------------------------------ */

static cJSON *
control_error (const char *message)
{
        cJSON *reply = cJSON_CreateObject ();
        cJSON_AddBoolToObject (reply, "ok", 0);
        cJSON_AddStringToObject (reply, "error", message);
        return reply;
}

/* {"op": "undo", "paths": ["SHARE/PATH", ...] (none: all), "force": bool} ->
 * {"ok": true, "outcomes": [{"share", "path", "problem"?, "changed_since"?}, ...]} */
static cJSON *
control_undo (Fsd *d, cJSON *req, GError **error)
{
        const cJSON *array = NULL, *item, *force = cJSON_GetObjectItemCaseSensitive (req, "force");
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
        g_auto (GStrv) which = NULL;
        g_autoptr (GPtrArray) outcomes = NULL;
        cJSON *reply, *list;

        if (proto_json_get_array (req, "paths", 100000, &array) == 0) {
                cJSON_ArrayForEach (item, array) {
                        if (!cJSON_IsString (item) || strlen (item->valuestring) > 4096 + 64) {
                                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                                     "paths: not a list of SHARE/PATH");
                                return NULL;
                        }
                        g_strv_builder_add (b, item->valuestring);
                }
                which = g_strv_builder_end (b);
        }
        outcomes = fs_server_undo (d->server, (const char *const *) which, cJSON_IsTrue (force),
                                   error);
        if (!outcomes)
                return NULL;
        reply = cJSON_CreateObject ();
        cJSON_AddBoolToObject (reply, "ok", 1);
        list = cJSON_AddArrayToObject (reply, "outcomes");
        for (guint i = 0; i < outcomes->len; i++) {
                const FsUndoOutcome *o = outcomes->pdata[i];
                cJSON *one = cJSON_CreateObject ();

                cJSON_AddStringToObject (one, "share", o->share);
                cJSON_AddStringToObject (one, "path", o->path);
                if (o->problem)
                        cJSON_AddStringToObject (one, "problem", o->problem);
                if (o->changed_since)
                        cJSON_AddBoolToObject (one, "changed_since", 1);
                cJSON_AddItemToArray (list, one);
        }
        return reply;
}

static cJSON *
control_handle (Fsd *d, const char *line, size_t len)
{
        g_autoptr (GError) error = NULL;
        cJSON *req = NULL, *reply;
        const char *op = NULL, *name = NULL, *path = NULL, *mode = NULL, *id = NULL;
        gboolean ok = FALSE;

        if (proto_json_parse ((const uint8_t *) line, len, &req) < 0 ||
            proto_json_get_string (req, "op", 32, &op) < 0) {
                cJSON_Delete (req);
                return control_error ("malformed request");
        }
        proto_json_get_string (req, "name", 64, &name);
        proto_json_get_string (req, "path", 4096, &path);
        proto_json_get_string (req, "mode", 16, &mode);
        proto_json_get_string (req, "id", 128, &id);

        if (strcmp (op, "list") == 0) {
                reply = fs_server_shares_to_json (d->server);
                cJSON_AddBoolToObject (reply, "ok", 1);
                cJSON_Delete (req);
                return reply;
        }
        if (strcmp (op, "status") == 0) {
                /* "connected": the guest's client answered this server's HELLO, which it does
                 * only after mounting /workspace, and the port has not closed since (a server
                 * whose VM just stopped must not pass for the new VM's). Callers wait for it
                 * before they call a VM ready (SECURITY.md F17). */
                char peek;
                bool connected =
                        d->established && recv (d->fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT) != 0;

                reply = fs_server_shares_to_json (d->server);
                cJSON_AddBoolToObject (reply, "ok", 1);
                cJSON_AddBoolToObject (reply, "connected", connected);
                cJSON_Delete (req);
                return reply;
        }
        if (strcmp (op, "add") == 0 && path) {
                g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
                g_auto (GStrv) protect = NULL;
                const cJSON *array = NULL, *item;

                if (proto_json_get_array (req, "protect", 64, &array) == 0) {
                        cJSON_ArrayForEach (item, array) {
                                if (cJSON_IsString (item))
                                        g_strv_builder_add (b, item->valuestring);
                        }
                }
                protect = g_strv_builder_end (b);
                ok = add_share (d, name, path, mode, (const char *const *) protect, &error);
        } else if (strcmp (op, "remove") == 0 && name) {
                ok = fs_server_remove_share (d->server, name, &error);
        } else if (strcmp (op, "stat") == 0 && name && path) {
                /* What the person is asked to approve deleting: the app passes "id" back. */
                reply = fs_server_approved_stat_json (d->server, name, path, &error);
                cJSON_Delete (req);
                return reply ? reply : control_error (error->message);
        } else if (strcmp (op, "undo") == 0) {
                /* The person undoes changes (fs-undo.c): between two guest requests. */
                reply = control_undo (d, req, &error);
                cJSON_Delete (req);
                return reply ? reply : control_error (error->message);
        } else if (strcmp (op, "keep-all") == 0) {
                ok = fs_server_keep_all (d->server, &error);
                cJSON_Delete (req);
                if (!ok)
                        return control_error (error->message);
                reply = cJSON_CreateObject ();
                cJSON_AddBoolToObject (reply, "ok", 1);
                return reply;
        } else if (strcmp (op, "set-kept-space") == 0) {
                /* {"mib": N}: 0 is the default (fs-server.h) */
                ok = fs_server_set_kept_space_json (
                        d->server, cJSON_GetObjectItemCaseSensitive (req, "mib"), &error);
        } else if (strcmp (op, "approved-delete") == 0 && name && path && id) {
                ok = fs_server_approved_delete (d->server, name, path, id, &error);
        } else if (strcmp (op, "set-mode") == 0 && name) {
                FsMode m;
                if (fs_mode_parse (mode, &m))
                        ok = fs_server_set_mode (d->server, name, m, &error);
                else
                        g_set_error (&error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                     _ ("“%s” is not a sharing mode: use ro, rw or rw-nodelete"),
                                     mode ? mode : "");
        } else {
                g_set_error_literal (&error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                     "unknown operation or missing argument");
        }
        cJSON_Delete (req);
        if (!ok)
                return control_error (error->message);
        save_config (d);
        reply = cJSON_CreateObject ();
        cJSON_AddBoolToObject (reply, "ok", 1);
        return reply;
}

typedef struct {
        Fsd *d;
        GSocketConnection *conn;
        GDataInputStream *in;
} ControlClient;

static void control_read_next (ControlClient *c);

static void
control_client_free (ControlClient *c)
{
        g_object_unref (c->in);
        g_object_unref (c->conn);
        g_free (c);
}

static void
on_control_line (GObject *source, GAsyncResult *res, gpointer user_data)
{
        ControlClient *c = user_data;
        g_autoptr (GError) error = NULL;
        gsize len = 0;
        g_autofree char *line = g_data_input_stream_read_line_finish (c->in, res, &len, &error);
        GOutputStream *out = g_io_stream_get_output_stream (G_IO_STREAM (c->conn));
        cJSON *reply;
        char *text;

        if (!line || len > MAX_CONTROL_LINE) {
                control_client_free (c);
                return;
        }
        reply = control_handle (c->d, line, len);
        text = cJSON_PrintUnformatted (reply);
        cJSON_Delete (reply);
        if (!g_output_stream_write_all (out, text, strlen (text), NULL, NULL, NULL) ||
            !g_output_stream_write_all (out, "\n", 1, NULL, NULL, NULL)) {
                cJSON_free (text);
                control_client_free (c);
                return;
        }
        cJSON_free (text);
        control_read_next (c);
}

static void
control_read_next (ControlClient *c)
{
        g_data_input_stream_read_line_async (c->in, G_PRIORITY_DEFAULT, NULL, on_control_line, c);
}

static gboolean
on_control_incoming (GSocketService *service,
                     GSocketConnection *conn,
                     GObject *source,
                     gpointer user_data)
{
        ControlClient *c = g_new0 (ControlClient, 1);

        c->d = user_data;
        c->conn = g_object_ref (conn);
        c->in = g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM (conn)));
        g_buffered_input_stream_set_buffer_size (G_BUFFERED_INPUT_STREAM (c->in), 4096);
        control_read_next (c);
        return TRUE;
}

static GSocketService *
control_listen (Fsd *d, const char *path, GError **error)
{
        g_autoptr (GSocketService) service = g_socket_service_new ();
        g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (path);
        mode_t old = umask (0077); /* only the person (and root) may change the shares */

        unlink (path);
        if (!g_socket_listener_add_address (G_SOCKET_LISTENER (service), addr, G_SOCKET_TYPE_STREAM,
                                            G_SOCKET_PROTOCOL_DEFAULT, NULL, NULL, error)) {
                umask (old);
                return NULL;
        }
        umask (old);
        g_signal_connect (service, "incoming", G_CALLBACK (on_control_incoming), d);
        g_socket_service_start (service);
        return g_steal_pointer (&service);
}

/* Main ---------------------------------------------------------------------------------------- */

/* --shm: a file both QEMU (ivshmem) and we map; its size bounds what READ_SHM/WRITE_SHM use. */
static gboolean
map_shm (Fsd *d, const char *path, GError **error)
{
        g_autofd int fd = open (path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        void *p;

        if (fd < 0 || fstat (fd, &st) < 0) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv), "%s: %s", path,
                             g_strerror (errsv));
                return FALSE;
        }
        if (!S_ISREG (st.st_mode) || st.st_size < (off_t) (FS_SHM_HEADER + FS_MAX_IO) ||
            st.st_size > (off_t) FS_SHM_MAX) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             "%s: not a shared-memory file of a usable size", path);
                return FALSE;
        }
        p = mmap (NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv), "mmap %s: %s", path,
                             g_strerror (errsv));
                return FALSE;
        }
        d->shm = p;
        d->shm_size = (size_t) st.st_size;
        return TRUE;
}

static gboolean
on_signal (gpointer user_data)
{
        fsd_quit (user_data, 0);
        return G_SOURCE_CONTINUE;
}

/* The organisation's policy: its protected and hidden paths with --protect's in every share,
 * and its limits on which folders are shared and how. */
static gboolean
set_managed_policy (
        FsServer *server, FsAudit *audit, const char *policy_path, char **protect, GError **error)
{
        g_autoptr (CorralPolicy) policy = NULL;
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
        g_auto (GStrv) all = NULL;
        const char *const *managed = NULL, *const *hidden = NULL;

        if (policy_path) {
                if (!(policy = corral_policy_load (policy_path, error)) ||
                    !corral_policy_check_version (policy, NULL, error))
                        return FALSE;
                corral_policy_get_strv (policy, "sharedFolders.protectedPaths", &managed, NULL);
                corral_policy_get_strv (policy, "sharedFolders.hiddenPaths", &hidden, NULL);
                fs_audit_set_journal (audit, corral_policy_audit_copies_to (policy, "journal"));
                fs_audit_write_policy (audit, corral_policy_get_digest (policy),
                                       corral_policy_get_sources (policy));
        }
        if (managed)
                g_strv_builder_addv (b, (const char **) managed);
        if (protect)
                g_strv_builder_addv (b, (const char **) protect);
        all = g_strv_builder_end (b);
        fs_server_set_managed_policy (server, policy);
        return fs_server_set_policy_paths (server, (const char *const *) all, hidden, error);
}

/* Corral's own folders (fs-own.h), this VM's among them: never shared, hidden inside shares. */
static void
set_own_dirs (FsServer *server, const char *config_path, const char *keep_dir)
{
        g_autofree char *vm_dir = config_path ? g_path_get_dirname (config_path) : NULL;
        const char *extra[3] = { NULL };
        g_auto (GStrv) dirs = NULL;
        guint n = 0;

        if (keep_dir)
                extra[n++] = keep_dir;
        if (vm_dir)
                extra[n++] = vm_dir;
        dirs = fs_own_dirs (extra);

        fs_server_set_own_dirs (server, (const char *const *) dirs);
}

int
main (int argc, char **argv)
{
        int fd_arg = -1;
        g_autofree char *connect_path = NULL, *control_path = NULL, *audit_path = NULL,
                        *keep_dir = NULL, *config_path = NULL, *lock_path = NULL, *shm_path = NULL,
                        *policy_path = NULL;
        g_auto (GStrv) share_specs = NULL, protect = NULL;
        gboolean verbose = FALSE, no_keep = FALSE;
        GOptionEntry entries[] = {
                { "fd", 0, 0, G_OPTION_ARG_INT, &fd_arg, "Serve the channel on this fd", "N" },
                { "connect", 0, 0, G_OPTION_ARG_FILENAME, &connect_path,
                  "Serve the channel on this unix socket (the VM's port)", "SOCKET" },
                { "share", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &share_specs, "Share a folder",
                  "NAME:MODE:PATH" },
                { "config", 0, 0, G_OPTION_ARG_FILENAME, &config_path,
                  "Load and keep the shared folders in this file", "FILE" },
                { "control", 0, 0, G_OPTION_ARG_FILENAME, &control_path,
                  "Accept share changes on this unix socket", "SOCKET" },
                { "audit", 0, 0, G_OPTION_ARG_FILENAME, &audit_path,
                  "Append changes and refusals to this JSON-lines file", "FILE" },
                { "keep-dir", 0, 0, G_OPTION_ARG_FILENAME, &keep_dir,
                  "Keep the change journal and the originals of changed files here", "DIR" },
                { "no-keep", 0, 0, G_OPTION_ARG_NONE, &no_keep,
                  "Keep no journal and no originals (nothing can be undone; rw-nodelete then "
                  "refuses what it would have to keep)",
                  NULL },
                { "shm", 0, 0, G_OPTION_ARG_FILENAME, &shm_path,
                  "Let file contents travel through this shared-memory file", "FILE" },
                { "lock", 0, 0, G_OPTION_ARG_FILENAME, &lock_path,
                  "Hold this lock while running; exit at once if another server holds it", "FILE" },
                { "protect", 0, 0, G_OPTION_ARG_STRING_ARRAY, &protect,
                  "Another protected path (read-only in every mode)", "PATTERN" },
                { "policy", 0, 0, G_OPTION_ARG_FILENAME, &policy_path,
                  "Apply this managed policy (a missing file is no policy)", "FILE" },
                { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Log more", NULL },
                { NULL },
        };
        g_autoptr (GOptionContext) ctx = g_option_context_new ("- serve shared folders to a VM");
        g_autoptr (GError) error = NULL;
        g_autoptr (GSocketService) control = NULL;
        g_autoptr (FsAudit) audit = NULL;
        g_autoptr (FsServer) server = NULL;
        Fsd d = { 0 };

        setlocale (LC_ALL, "");
        g_option_context_add_main_entries (ctx, entries, NULL);
        if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
                g_printerr ("corral-fsd: %s\n", error->message);
                return 2;
        }
        if ((fd_arg >= 0) == (connect_path != NULL)) {
                g_printerr ("corral-fsd: give exactly one of --fd or --connect\n");
                return 2;
        }
        if (verbose)
                g_setenv ("G_MESSAGES_DEBUG", "corral-fsd", TRUE);
        if (lock_path) {
                /* One server per VM: a second one started by a racing corralctl leaves. */
                int lock_fd = open (lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
                if (lock_fd < 0 || flock (lock_fd, LOCK_EX | LOCK_NB) < 0) {
                        g_debug ("another file server holds %s", lock_path);
                        return 0;
                }
                /* kept open (and locked) until exit */
        }
        if (no_keep)
                g_clear_pointer (&keep_dir, g_free);
        else if (!keep_dir)
                keep_dir = g_build_filename (g_get_user_state_dir (), "corral", "kept", NULL);

        audit = fs_audit_open (audit_path, &error);
        if (!audit) {
                g_printerr ("corral-fsd: %s\n", error->message);
                return 1;
        }
        server = fs_server_new (keep_dir, audit);
        d.server = server;
        d.config_path = config_path;
        d.loop = g_main_loop_new (NULL, FALSE);
        d.reply_buf = g_malloc (PROTO_MAX_PAYLOAD);
        g_queue_init (&d.out);
        fs_server_set_notify (server, on_notify, &d);
        if (shm_path) {
                if (!map_shm (&d, shm_path, &error)) {
                        g_printerr ("corral-fsd: --shm %s\n", error->message);
                        return 1;
                }
                fs_server_set_shm (server, d.shm, d.shm_size);
        }
        set_own_dirs (server, config_path, keep_dir);
        if (!set_managed_policy (server, audit, policy_path, protect, &error)) {
                g_printerr ("corral-fsd: %s\n", error->message);
                return 2;
        }

        if (config_path && !load_config (&d, &error)) {
                g_printerr ("corral-fsd: %s\n", error->message);
                return 1;
        }
        for (guint i = 0; share_specs && share_specs[i]; i++) {
                g_auto (GStrv) parts = g_strsplit (share_specs[i], ":", 3);
                if (g_strv_length (parts) != 3 ||
                    !add_share (&d, parts[0], parts[2], parts[1], NULL, &error)) {
                        g_printerr ("corral-fsd: --share %s: %s\n", share_specs[i],
                                    error ? error->message : "expected NAME:MODE:PATH");
                        return 2;
                }
        }
        save_config (&d);
        if (control_path) {
                control = control_listen (&d, control_path, &error);
                if (!control) {
                        g_printerr ("corral-fsd: %s\n", error->message);
                        return 1;
                }
        }

        d.fd = fd_arg >= 0 ? fd_arg : corral_unix_connect (connect_path);
        if (d.fd < 0) {
                g_printerr ("corral-fsd: cannot connect to %s: %s\n", connect_path,
                            g_strerror (-d.fd));
                return 1;
        }
        fcntl (d.fd, F_SETFD, FD_CLOEXEC);
        if (!g_unix_set_fd_nonblocking (d.fd, TRUE, &error) || proto_decoder_init (&d.dec, 0) < 0) {
                g_printerr ("corral-fsd: %s\n", error ? error->message : "out of memory");
                return 1;
        }
        g_unix_signal_add (SIGTERM, on_signal, &d);
        g_unix_signal_add (SIGINT, on_signal, &d);

        send_hello (&d);
        pump (&d);
        g_main_loop_run (d.loop);

        if (control_path)
                unlink (control_path);
        g_clear_handle_id (&d.in_source, g_source_remove);
        g_clear_handle_id (&d.out_source, g_source_remove);
        g_queue_clear_full (&d.out, (GDestroyNotify) g_bytes_unref);
        proto_decoder_clear (&d.dec);
        g_free (d.reply_buf);
        g_main_loop_unref (d.loop);
        close (d.fd);
        return d.status;
}
