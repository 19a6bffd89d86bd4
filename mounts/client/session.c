/* session.c — HELLO, the table of pending requests, frame dispatch and cache invalidations.
 *
 * Until the server's HELLO is answered nothing is sent. A new HELLO ends the previous session:
 * every pending request fails with EIO (it may or may not have run) and the epoch changes, so
 * inodes and handles of the old connection are answered with ESTALE / EIO from then on.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Ids and the epoch ------------------------------------------------------------------------- */

uint64_t
fs_node_of (const Fs *fs, fuse_ino_t ino)
{
        if (ino == FUSE_ROOT_ID)
                return FS_ROOT_NODE; /* the root is node 1 in every session */
        if (!fs->in_session || (ino >> FS_EPOCH_SHIFT) != fs->epoch)
                return 0;
        return ino & FS_NODE_MAX;
}

fuse_ino_t
fs_ino_of (const Fs *fs, uint64_t node)
{
        if (node == FS_ROOT_NODE)
                return FUSE_ROOT_ID;
        return ((uint64_t) fs->epoch << FS_EPOCH_SHIFT) | node;
}

uint64_t
fs_handle_of (const Fs *fs, uint64_t fh)
{
        if (!fs->in_session || (fh >> FS_EPOCH_SHIFT) != fs->epoch)
                return 0;
        return fh & FS_NODE_MAX;
}

uint64_t
fs_fh_of (const Fs *fs, uint64_t handle)
{
        return ((uint64_t) fs->epoch << FS_EPOCH_SHIFT) | handle;
}

/* Pending requests ---------------------------------------------------------------------------- */

int
fs_session_init (Fs *fs)
{
        fs->slots = calloc (FS_MAX_SLOTS, sizeof *fs->slots);
        fs->notify_queue = calloc (FS_NOTIFY_QUEUE, sizeof *fs->notify_queue);
        fs->dirbuf = malloc (FS_MAX_DIR_REPLY);
        if (!fs->slots || !fs->notify_queue || !fs->dirbuf || fs_la_init (fs) < 0)
                return -ENOMEM;
        /* Free list over every slot but the FORGET one. */
        for (uint32_t i = 0; i < FS_FORGET_SLOT; i++)
                fs->slots[i].next_free = i + 1 < FS_FORGET_SLOT ? i + 1 : FS_MAX_SLOTS;
        fs->free_head = 0;
        return 0;
}

void
fs_session_clear (Fs *fs)
{
        free (fs->slots);
        free (fs->notify_queue);
        free (fs->dirbuf);
        fs_la_clear (fs);
        fs->slots = NULL;
        fs->notify_queue = NULL;
        fs->dirbuf = NULL;
}

static uint32_t
next_id (Fs *fs, uint32_t slot)
{
        /* Ids stay within the header's 31-bit channel range and are never 0. */
        const uint32_t seq_max = PROTO_MAX_CHANNEL >> FS_SLOT_BITS;

        fs->seq = fs->seq >= seq_max ? 1 : fs->seq + 1;
        return (fs->seq << FS_SLOT_BITS) | slot;
}

FsPending *
fs_pending_new (Fs *fs, fuse_req_t req, uint16_t op)
{
        uint32_t slot = fs->free_head;
        FsPending *p;

        if (slot >= FS_MAX_SLOTS)
                return NULL;
        p = &fs->slots[slot];
        fs->free_head = p->next_free;
        memset (p, 0, sizeof *p);
        p->id = next_id (fs, slot);
        p->op = op;
        p->req = req;
        p->shm_slot = -1;
        fs->n_pending++;
        return p;
}

void
fs_pending_free (Fs *fs, FsPending *p)
{
        uint32_t slot = (uint32_t) (p - fs->slots);

        fs_shm_release (fs, p->shm_slot);
        p->shm_slot = -1;
        p->id = 0;
        p->req = NULL;
        p->next_free = fs->free_head;
        fs->free_head = slot;
        fs->n_pending--;
}

static FsPending *
pending_lookup (Fs *fs, uint32_t id)
{
        FsPending *p = &fs->slots[id & FS_SLOT_MASK];

        return p->id != 0 && p->id == id ? p : NULL;
}

bool
fs_session_can_accept (const Fs *fs)
{
        /* Each FUSE request adds at most one pending entry and one frame. */
        return fs->free_head < FS_MAX_SLOTS && fs->out.bytes < FS_OUTQ_HIGH;
}

/* Whether q may change a file, a folder or what the kernel cached about one. */
static bool
may_change (const FsRequest *q)
{
        switch (q->op) {
        case FS_OP_LOOKUP:
        case FS_OP_FORGET:
        case FS_OP_BATCH_FORGET:
        case FS_OP_GETATTR:
        case FS_OP_READLINK:
        case FS_OP_READ:
        case FS_OP_READ_SHM:
        case FS_OP_RELEASE:
        case FS_OP_FSYNC:
        case FS_OP_OPENDIR:
        case FS_OP_READDIR:
        case FS_OP_READDIRPLUS:
        case FS_OP_RELEASEDIR:
        case FS_OP_STATFS:
                return false;
        case FS_OP_OPEN:
                return (q->flags & FS_O_TRUNC) != 0;
        default:
                return true;
        }
}

int
fs_send (Fs *fs, FsPending *p, const FsRequest *q)
{
        /* The largest fixed part (SETATTR) is 68 bytes. */
        size_t cap = 128 + q->name.len + q->name2.len + q->data_len;
        uint8_t *buf;
        FsWriter w;
        int r;

        if (!fs->in_session || !fs->connected || fs->hup_backoff)
                return -EIO;
        if (may_change (q))
                fs_la_invalidate (fs);
        buf = malloc (PROTO_HEADER_SIZE + cap);
        if (!buf)
                return -ENOMEM;
        fs_writer_init (&w, buf + PROTO_HEADER_SIZE, cap);
        r = fs_request_encode (q, &w);
        if (r < 0 || w.len > PROTO_MAX_PAYLOAD) {
                fs_log ("cannot encode %s: %s", fs_op_name (q->op),
                        strerror (r < 0 ? -r : EMSGSIZE));
                free (buf);
                return r < 0 ? r : -EMSGSIZE;
        }
        proto_header_encode (buf, PROTO_FRAME_FS_REQUEST, 0,
                             p ? p->id : next_id (fs, FS_FORGET_SLOT), (uint32_t) w.len);
        fs_outq_push (fs, buf, PROTO_HEADER_SIZE + w.len);
        if (p)
                fs_debug ("-> %u %s", p->id, fs_op_name (q->op));
        return 0;
}

void
fs_send_forget (Fs *fs, uint64_t node, uint64_t nlookup)
{
        FsRequest q = { .op = FS_OP_FORGET, .node = node, .nlookup = nlookup };

        /* No reply; a failure only means the connection is gone, and its nodes with it. */
        (void) fs_send (fs, NULL, &q);
}

void
fs_forgets_init (FsForgets *b)
{
        fs_writer_init (&b->w, b->buf, sizeof b->buf);
        b->count = 0;
}

void
fs_forgets_flush (Fs *fs, FsForgets *b)
{
        FsRequest q = {
                .op = FS_OP_BATCH_FORGET, .data = b->buf, .data_len = b->w.len, .count = b->count
        };

        if (b->count > 0)
                (void) fs_send (fs, NULL, &q);
        fs_forgets_init (b);
}

void
fs_forgets_add (Fs *fs, FsForgets *b, uint64_t node, uint64_t nlookup)
{
        fs_write_u64 (&b->w, node);
        fs_write_u64 (&b->w, nlookup);
        if (++b->count == FS_MAX_FORGETS)
                fs_forgets_flush (fs, b);
}

void
fs_send_release (Fs *fs, uint16_t op, uint64_t handle)
{
        FsRequest q = { .op = op, .handle = handle };
        FsPending *p = fs_pending_new (fs, NULL, op);

        if (p && fs_send (fs, p, &q) < 0)
                fs_pending_free (fs, p);
}

void
fs_session_end (Fs *fs, const char *why)
{
        if (!fs->slots)
                return;
        if (fs->in_session) {
                fs_debug ("session ends: %s", why);
                fs->session_lost_ms = fs_now_ms ();
        }
        fs->in_session = false;
        for (uint32_t i = 0; i < FS_FORGET_SLOT; i++) {
                FsPending *p = &fs->slots[i];

                if (p->id == 0)
                        continue;
                fs_reply_fail (fs, p, EIO);
                fs_pending_free (fs, p);
        }
        /* The server's node table went with the session, and the lookups listed in it. */
        fs_la_reset (fs);
        /* Requests of the old session must not reach a new one. */
        fs_outq_drop (fs);
}

/* HELLO ----------------------------------------------------------------------------------------- */

static void
send_hello (Fs *fs, const char *nonce)
{
        cJSON *obj = cJSON_CreateObject ();
        uint8_t *buf;
        size_t len;

        if (!obj || !cJSON_AddNumberToObject (obj, "version", FS_PROTO_VERSION) ||
            !cJSON_AddStringToObject (obj, "role", "fs-client") ||
            !cJSON_AddStringToObject (obj, "nonce", nonce) ||
            proto_frame_build_json (PROTO_FRAME_HELLO, obj, &buf, &len) < 0) {
                fs_log ("cannot answer HELLO: out of memory");
                cJSON_Delete (obj);
                return;
        }
        cJSON_Delete (obj);
        fs_outq_push (fs, buf, len);
        fs->in_session = true;
}

#define FS_HELLO_WAIT_MS 500 /* a server HELLO already queued arrives well within this */
#define FS_HELLO_ASK_EVERY_MS 2000

int64_t
fs_session_ask_hello (Fs *fs, int64_t now)
{
        int64_t due;
        cJSON *obj;
        uint8_t *buf;
        size_t len;

        if (fs->in_session || fs->had_session || !fs->connected)
                return -1; /* a session lost later is the server's to restart */
        due = fs->hello_asked_ms ? fs->hello_asked_ms + FS_HELLO_ASK_EVERY_MS
                                 : fs->started_ms + FS_HELLO_WAIT_MS;
        if (now < due)
                return due;
        obj = cJSON_CreateObject ();
        if (!obj || !cJSON_AddNumberToObject (obj, "version", FS_PROTO_VERSION) ||
            !cJSON_AddStringToObject (obj, "role", "fs-client") ||
            !cJSON_AddStringToObject (obj, "request", "hello") ||
            proto_frame_build_json (PROTO_FRAME_HELLO, obj, &buf, &len) < 0) {
                cJSON_Delete (obj);
                return now + FS_HELLO_ASK_EVERY_MS;
        }
        cJSON_Delete (obj);
        fs_debug ("no HELLO yet: asking the server for one");
        fs_outq_push (fs, buf, len);
        fs->hello_asked_ms = now;
        return now + FS_HELLO_ASK_EVERY_MS;
}

static void
handle_hello (Fs *fs, const ProtoFrame *f)
{
        ProtoHello hello;
        int64_t shm_size = 0;

        if (proto_hello_parse (f, "fs-server", &hello) < 0) {
                fs_log ("invalid HELLO ignored");
                return;
        }
        fs_session_end (fs, "new HELLO");
        if (hello.min_version > FS_PROTO_VERSION) {
                fs_log ("server needs protocol version %lld or later; this client speaks %d",
                        (long long) hello.min_version, FS_PROTO_VERSION);
                proto_hello_clear (&hello);
                return;
        }
        if (proto_json_get_int (hello.json, "shm_size", 1, FS_SHM_MAX, &shm_size) == -EINVAL)
                shm_size = 0;
        fs_shm_check (fs, hello.nonce, shm_size);
        /* A new epoch makes every inode and handle of the previous session stale. */
        fs->epoch = (uint16_t) (fs->epoch + 1 == 0 ? 1 : fs->epoch + 1);
        send_hello (fs, hello.nonce);
        fs->had_session = true;
        fs_debug ("session %u starts", fs->epoch);
        proto_hello_clear (&hello);
}

/* Frames ---------------------------------------------------------------------------------------- */

static void
handle_reply (Fs *fs, const ProtoFrame *f)
{
        FsPending *p = pending_lookup (fs, f->channel);

        if (!p) {
                fs_debug ("reply %u matches no request; dropped", f->channel);
                return;
        }
        fs_debug ("<- %u %s (%u bytes)", p->id, fs_op_name (p->op), f->length);
        fs_reply_complete (fs, p, f->payload, f->length);
        fs_pending_free (fs, p);
}

static void
queue_notification (Fs *fs, const FsNotification *n)
{
        pthread_mutex_lock (&fs->notify_lock);
        if (fs->notify_len == FS_NOTIFY_QUEUE) {
                /* Full: the oldest goes. What it covered expires after the attribute timeout
                 * anyway. */
                fs->notify_head = (fs->notify_head + 1) % FS_NOTIFY_QUEUE;
                fs->notify_len--;
        }
        fs->notify_queue[(fs->notify_head + fs->notify_len) % FS_NOTIFY_QUEUE] = *n;
        fs->notify_len++;
        pthread_cond_signal (&fs->notify_cond);
        pthread_mutex_unlock (&fs->notify_lock);
}

static void
handle_notify (Fs *fs, const ProtoFrame *f)
{
        FsNotification n = { 0 };
        FsReader r;
        uint64_t node;
        FsStr name = { NULL, 0 };

        fs_reader_init (&r, f->payload, f->length);
        n.kind = (uint8_t) fs_read_u32 (&r);
        node = fs_read_u64 (&r);
        if (n.kind == FS_NOTIFY_INVAL_ENTRY)
                name = fs_read_str (&r, FS_MAX_NAME);
        if (r.bad || r.left != 0 ||
            (n.kind != FS_NOTIFY_INVAL_ENTRY && n.kind != FS_NOTIFY_INVAL_NODE) || node == 0 ||
            node > FS_NODE_MAX ||
            (n.kind == FS_NOTIFY_INVAL_ENTRY && !fs_name_valid (name.ptr, name.len))) {
                fs_log ("malformed notification ignored");
                return;
        }
        fs_la_invalidate (fs);
        if (!fs->notify_started)
                return;
        n.ino = fs_ino_of (fs, node);
        n.name_len = (uint8_t) name.len;
        if (name.len)
                memcpy (n.name, name.ptr, name.len);
        queue_notification (fs, &n);
}

void
fs_session_handle_frame (Fs *fs, const ProtoFrame *f)
{
        if (f->type == PROTO_FRAME_HELLO) {
                handle_hello (fs, f);
                return;
        }
        if (!fs->in_session)
                return;
        switch (f->type) {
        case PROTO_FRAME_FS_REPLY:
                handle_reply (fs, f);
                break;
        case PROTO_FRAME_FS_NOTIFY:
                handle_notify (fs, f);
                break;
        default:
                fs_debug ("%s frame ignored", proto_frame_type_name (f->type));
                break;
        }
}

/* The invalidation thread --------------------------------------------------------------------- */

static void *
notify_main (void *data)
{
        Fs *fs = data;

        pthread_mutex_lock (&fs->notify_lock);
        for (;;) {
                FsNotification n;
                int r;

                while (fs->notify_len == 0 && !fs->notify_stop)
                        pthread_cond_wait (&fs->notify_cond, &fs->notify_lock);
                if (fs->notify_stop)
                        break;
                n = fs->notify_queue[fs->notify_head];
                fs->notify_head = (fs->notify_head + 1) % FS_NOTIFY_QUEUE;
                fs->notify_len--;
                pthread_mutex_unlock (&fs->notify_lock);

                if (n.kind == FS_NOTIFY_INVAL_ENTRY)
                        r = fuse_lowlevel_notify_inval_entry (fs->se, n.ino, n.name, n.name_len);
                else
                        r = fuse_lowlevel_notify_inval_inode (fs->se, n.ino, 0, 0);
                /* ENOENT: the kernel did not have it cached; nothing to drop. */
                if (r < 0 && r != -ENOENT)
                        fs_debug ("invalidation failed: %s", strerror (-r));

                pthread_mutex_lock (&fs->notify_lock);
        }
        pthread_mutex_unlock (&fs->notify_lock);
        return NULL;
}

int
fs_notify_start (Fs *fs)
{
        int r;

        pthread_mutex_init (&fs->notify_lock, NULL);
        pthread_cond_init (&fs->notify_cond, NULL);
        r = pthread_create (&fs->notify_thread, NULL, notify_main, fs);
        if (r != 0)
                return -r;
        fs->notify_started = true;
        return 0;
}

void
fs_notify_stop (Fs *fs)
{
        if (!fs->notify_started)
                return;
        pthread_mutex_lock (&fs->notify_lock);
        fs->notify_stop = true;
        pthread_cond_signal (&fs->notify_cond);
        pthread_mutex_unlock (&fs->notify_lock);
        pthread_join (fs->notify_thread, NULL);
        fs->notify_started = false;
}
