/* fsd-peer.c — see fsd-peer.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fsd-peer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void
fsd_peer_write (FsdPeer *peer, const void *data, size_t len)
{
        const uint8_t *p = data;

        while (len > 0) {
                ssize_t n = write (peer->fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                g_assert_cmpint (n, >, 0);
                p += n;
                len -= (size_t) n;
        }
}

void
fsd_peer_next (FsdPeer *peer, ProtoFrame *ret)
{
        for (;;) {
                size_t room;
                uint8_t *space;
                ssize_t n;
                int r = proto_decoder_next (&peer->dec, ret);

                g_assert_cmpint (r, >=, 0);
                if (r == 1)
                        return;
                space = proto_decoder_space (&peer->dec, &room);
                n = read (peer->fd, space, room);
                if (n < 0 && errno == EINTR)
                        continue;
                g_assert_cmpint (n, >, 0);
                proto_decoder_commit (&peer->dec, (size_t) n);
        }
}

void
fsd_peer_answer (FsdPeer *peer, const ProtoFrame *f)
{
        g_autofree uint8_t *buf = NULL;
        const char *nonce = NULL;
        cJSON *obj = NULL, *hello;
        size_t len;

        g_assert_cmpint (f->type, ==, PROTO_FRAME_HELLO);
        g_assert_cmpint (proto_json_parse (f->payload, f->length, &obj), ==, 0);
        g_assert_cmpint (proto_json_get_string (obj, "nonce", 64, &nonce), ==, 0);
        g_strlcpy (peer->nonce, nonce, sizeof peer->nonce);
        hello = cJSON_CreateObject ();
        cJSON_AddNumberToObject (hello, "version", FS_PROTO_VERSION);
        cJSON_AddStringToObject (hello, "role", "fs-client");
        cJSON_AddStringToObject (hello, "nonce", nonce);
        cJSON_Delete (obj);
        g_assert_cmpint (proto_frame_build_json (PROTO_FRAME_HELLO, hello, &buf, &len), ==, 0);
        cJSON_Delete (hello);
        fsd_peer_write (peer, buf, len);
}

static void
answer_hello (FsdPeer *peer)
{
        ProtoFrame f;

        fsd_peer_next (peer, &f);
        fsd_peer_answer (peer, &f);
}

FsdPeer *
fsd_peer_start (const char *const *args)
{
        const char *fsd = g_getenv ("CORRAL_FSD_PATH");
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_autoptr (GError) error = NULL;
        FsdPeer *peer = g_new0 (FsdPeer, 1);
        int sv[2];

        g_assert_nonnull (fsd);
        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_ptr_array_add (argv, (char *) fsd);
        g_ptr_array_add (argv, "--fd");
        g_ptr_array_add (argv, "3");
        for (guint i = 0; args && args[i]; i++)
                g_ptr_array_add (argv, (char *) args[i]);
        g_ptr_array_add (argv, NULL);
        g_subprocess_launcher_take_fd (l, sv[1], 3);
        /* Under ASan, freed memory waits in a quarantine (256 MiB by default) before it can be
         * reused: the server's peak would measure the quarantine, not its reply queue. */
        if (g_getenv ("ASAN_OPTIONS")) {
                g_autofree char *asan =
                        g_strconcat (g_getenv ("ASAN_OPTIONS"), ":quarantine_size_mb=0", NULL);
                g_subprocess_launcher_setenv (l, "ASAN_OPTIONS", asan, TRUE);
        }
        peer->process = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata, &error);
        g_assert_no_error (error);
        peer->pid = atoi (g_subprocess_get_identifier (peer->process));
        peer->fd = sv[0];
        g_assert_cmpint (proto_decoder_init (&peer->dec, 0), ==, 0);
        answer_hello (peer);
        return peer;
}

void
fsd_peer_encode (GByteArray *out, uint32_t channel, const FsRequest *q)
{
        uint8_t payload[4096], header[PROTO_HEADER_SIZE];
        FsWriter w;

        fs_writer_init (&w, payload, sizeof payload);
        g_assert_cmpint (fs_request_encode (q, &w), ==, 0);
        proto_header_encode (header, PROTO_FRAME_FS_REQUEST, 0, channel, (uint32_t) w.len);
        g_byte_array_append (out, header, sizeof header);
        g_byte_array_append (out, payload, (guint) w.len);
}

int
fsd_peer_call (FsdPeer *peer, uint32_t channel, const FsRequest *q, FsReader *body)
{
        g_autoptr (GByteArray) frame = g_byte_array_new ();
        ProtoFrame f;
        FsReader r;
        uint32_t status;

        fsd_peer_encode (frame, channel, q);
        fsd_peer_write (peer, frame->data, frame->len);
        do
                fsd_peer_next (peer, &f);
        while (f.type != PROTO_FRAME_FS_REPLY);
        g_assert_cmpuint (f.channel, ==, channel);
        fs_reader_init (&r, f.payload, f.length);
        status = fs_read_u32 (&r);
        if (body)
                *body = r;
        return -(int) status;
}

guint64
fsd_peer_status_kib (FsdPeer *peer, const char *key)
{
        g_autofree char *path = g_strdup_printf ("/proc/%d/status", peer->pid);
        g_autofree char *text = NULL;
        g_autofree char *needle = g_strdup_printf ("\n%s:", key);
        const char *line;

        g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
        line = strstr (text, needle);
        g_assert_nonnull (line);
        return g_ascii_strtoull (line + strlen (needle), NULL, 10);
}

void
fsd_peer_stop (FsdPeer *peer)
{
        g_autoptr (GError) error = NULL;

        close (peer->fd);
        peer->fd = -1;
        g_subprocess_wait_check (peer->process, NULL, &error);
        g_assert_no_error (error);
}

void
fsd_peer_free (FsdPeer *peer)
{
        if (!peer)
                return;
        if (peer->fd >= 0) {
                /* Not stopped: a failed test; leave no server behind. */
                close (peer->fd);
                g_subprocess_force_exit (peer->process);
                g_subprocess_wait (peer->process, NULL, NULL);
        }
        g_clear_object (&peer->process);
        proto_decoder_clear (&peer->dec);
        g_free (peer);
}
