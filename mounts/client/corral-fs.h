/* corral-fs.h — the guest FUSE client's private header (see proto/FS-PROTOCOL.md).
 *
 * corral-fs is a translator: every FUSE request becomes one FS_REQUEST to the host's corral-fsd,
 * and its FS_REPLY becomes the answer to the kernel. The one exception: a LOOKUP may be answered
 * from a listing the client read ahead of the kernel (lookahead.c), entries the server resolved
 * and counted as lookups all the same. One thread runs one poll loop over the FUSE
 * session fd and the channel fd; a second, tiny thread only delivers cache invalidations (a
 * notification written from the loop thread could wait for a lock held by a request whose reply
 * that same thread would have to process).
 *
 * Node ids and handles from the server are valid for one connection only. The FUSE inode and
 * file handle carry the session's epoch in their top 16 bits, so that after a reconnect old
 * inodes are recognised (ESTALE) instead of being taken for a new node with the same number.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#define FUSE_USE_VERSION 35

#include "fs.h"
#include "corral-outq.h"
#include "proto.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Pending requests: a fixed table; the request id names its slot (low bits) and a sequence
 * number (high bits), so a reply is found in O(1) and a stale or forged id matches nothing. */
#define FS_SLOT_BITS 12
#define FS_MAX_SLOTS (1u << FS_SLOT_BITS)
#define FS_SLOT_MASK (FS_MAX_SLOTS - 1)
/* The last slot is never pending: it numbers FORGETs, which have no reply. */
#define FS_FORGET_SLOT FS_SLOT_MASK

/* Stop reading FUSE requests while this much is queued for the host. */
#define FS_OUTQ_HIGH (4u * 1024u * 1024u)

#define FS_EPOCH_SHIFT 48
#define FS_NODE_MAX ((UINT64_C (1) << FS_EPOCH_SHIFT) - 1)

#define FS_NOTIFY_QUEUE 256
/* Serial: how long to wait before looking at a port whose host side is gone. */
#define FS_HUP_BACKOFF_MS 100
/* After a session ends (the file server died or restarts), new requests wait in the kernel
 * this long for the next session before they fail with EIO: a re-attach is seamless, a host
 * that never comes back does not hang the guest's programs for ever. */
#define FS_REATTACH_HOLD_MS 20000

typedef enum {
        FS_TRANSPORT_FD,
        FS_TRANSPORT_UNIX,
        FS_TRANSPORT_SERIAL,
} FsTransport;

typedef struct {
        uint32_t id; /* 0: free */
        uint16_t op;
        fuse_req_t req; /* NULL: nobody waits (a clean-up RELEASE) */
        uint32_t size; /* READ/READDIR: what the kernel asked for */
        bool has_fi;
        struct fuse_file_info fi; /* OPEN/CREATE/OPENDIR: the kernel's, copied */
        uint32_t next_free;
        int shm_slot; /* READ_SHM / WRITE_SHM: the shared-memory slot it holds, else -1 */
        uint64_t parent; /* LOOKUP: the directory's node */
        bool la; /* one of the look-ahead's own requests (lookahead.c) */
        uint16_t la_dir; /* ... for this listing, */
        uint32_t la_serial; /* ... unless the listing was dropped since */
} FsPending;

typedef struct FsLaDir FsLaDir;

/* Shared-memory slots: each holds one request's file contents. */
#define FS_SHM_SLOT FS_MAX_IO
#define FS_SHM_MAX_SLOTS 64

typedef struct {
        uint8_t kind; /* FsNotifyKind */
        uint64_t ino;
        uint8_t name_len;
        char name[FS_MAX_NAME + 1];
} FsNotification;

typedef struct {
        /* options */
        FsTransport transport;
        const char *address;
        int opt_fd;
        uid_t uid;
        gid_t gid;
        bool have_uid, have_gid;
        double timeout;
        bool lookahead; /* --no-lookahead turns it off */
        bool readahead_tuned; /* after the kernel applied our INIT reply */
        const char *mountpoint;

        /* shared memory (--shm-file, or the ivshmem device of a VM) */
        const char *shm_path;
        uint8_t *shm;
        size_t shm_map_size;
        bool shm_ok; /* this session's server maps the same memory */
        uint32_t shm_slots;
        uint64_t shm_busy; /* bit per slot */
        uint8_t *shm_bounce; /* FS_MAX_IO: READ_SHM replies are copied here for the kernel */

        /* FUSE */
        struct fuse_session *se;
        struct fuse_buf fbuf;
        bool mounted;
        uint8_t *dirbuf; /* FS_MAX_DIR_REPLY bytes, for readdir replies */

        /* channel */
        int chan_fd;
        ProtoDecoder dec;
        bool connected;
        bool hup_backoff; /* serial: the host side is gone, look again at hup_until_ms */
        int64_t hup_until_ms;
        CorralOutq out; /* util/corral-outq.h */

        /* session */
        bool in_session;
        bool had_session;
        int64_t session_lost_ms; /* when the last session ended (fs_now_ms) */
        int64_t hello_asked_ms; /* when a HELLO was last asked for (0: never) */
        int64_t started_ms; /* when the channel was opened */
        uint16_t epoch;

        /* pending requests */
        FsPending *slots;
        uint32_t free_head; /* FS_MAX_SLOTS: none */
        uint32_t n_pending;
        uint32_t seq;

        /* look-ahead listings (lookahead.c) */
        FsLaDir *la_dirs; /* FS_LA_DIRS records */

        /* invalidation thread */
        pthread_t notify_thread;
        bool notify_started;
        pthread_mutex_t notify_lock;
        pthread_cond_t notify_cond;
        FsNotification *notify_queue;
        unsigned notify_head, notify_len;
        bool notify_stop;

        bool quit;
        int exit_code;
} Fs;

extern bool fs_verbose;

void fs_log (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
void fs_debug (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

/* shm.c */
/* Maps --shm-file, or the VM's ivshmem device when there is one (best effort: without it,
 * contents travel inline). */
void fs_shm_open (Fs *fs);
/* After the server's HELLO: whether it announced memory holding its nonce. */
void fs_shm_check (Fs *fs, const char *nonce, int64_t server_size);
/* A free slot, marked busy, or -1. */
int fs_shm_take (Fs *fs);
void fs_shm_release (Fs *fs, int slot);
uint32_t fs_shm_offset (int slot);

/* transport.c */
int fs_transport_open (Fs *fs);
void fs_transport_close (Fs *fs);
/* Reads what the channel has and handles every complete frame. */
void fs_transport_read (Fs *fs);
/* Writes as much of the queue as the channel takes now. */
void fs_transport_flush (Fs *fs);
/* The channel ended: exit for --fd/--unix, wait for a new HELLO for --serial. */
void fs_transport_lost (Fs *fs, const char *why);
/* CLOCK_MONOTONIC in milliseconds */
int64_t fs_now_ms (void);
/* Queues one frame (takes buf). */
void fs_outq_push (Fs *fs, uint8_t *buf, size_t len);
/* Drops queued frames, except the rest of one that is half written. */
void fs_outq_drop (Fs *fs);
void fs_outq_clear (Fs *fs);

/* session.c */
int fs_session_init (Fs *fs);
void fs_session_clear (Fs *fs);
void fs_session_handle_frame (Fs *fs, const ProtoFrame *f);
/* Fails every pending request with EIO and leaves the session. */
void fs_session_end (Fs *fs, const char *why);
/* Without a session for a while after start (this process restarted while the server kept
 * running, so its HELLO went to the process before), asks the server for a new one. Returns
 * when to look again (fs_now_ms), or -1. */
int64_t fs_session_ask_hello (Fs *fs, int64_t now);
/* true while the loop may take another FUSE request. */
bool fs_session_can_accept (const Fs *fs);

FsPending *fs_pending_new (Fs *fs, fuse_req_t req, uint16_t op);
void fs_pending_free (Fs *fs, FsPending *p);
/* Encodes and queues q for p (or, with p NULL, a FORGET that has no reply). On failure the
 * caller still owns p and answers the kernel itself. */
int fs_send (Fs *fs, FsPending *p, const FsRequest *q);

/* FUSE inode <-> server node, and handles, under the current epoch. 0 when stale. */
uint64_t fs_node_of (const Fs *fs, fuse_ino_t ino);
fuse_ino_t fs_ino_of (const Fs *fs, uint64_t node);
uint64_t fs_handle_of (const Fs *fs, uint64_t fh);
uint64_t fs_fh_of (const Fs *fs, uint64_t handle);

/* Gives lookups back to the server, batched: add, then flush. */
typedef struct {
        uint8_t buf[FS_MAX_FORGETS * 16];
        FsWriter w;
        uint32_t count;
} FsForgets;
void fs_forgets_init (FsForgets *b);
void fs_forgets_add (Fs *fs, FsForgets *b, uint64_t node, uint64_t nlookup);
void fs_forgets_flush (Fs *fs, FsForgets *b);
void fs_send_forget (Fs *fs, uint64_t node, uint64_t nlookup);
/* Gives a handle back (a clean-up RELEASE or RELEASEDIR nobody waits for). */
void fs_send_release (Fs *fs, uint16_t op, uint64_t handle);

int fs_notify_start (Fs *fs);
void fs_notify_stop (Fs *fs);

/* ops.c */
extern const struct fuse_lowlevel_ops fs_ops;

/* lookahead.c: LOOKUPs answered from a directory listing read ahead of the kernel */
int fs_la_init (Fs *fs);
/* Drops every listing without a word to the server (its session is gone) and frees them. */
void fs_la_clear (Fs *fs);
/* Drops every listing without a word to the server: the session that counted them ended. */
void fs_la_reset (Fs *fs);
/* Answers the kernel from a listing of parent and returns true, or returns false (untouched
 * req) when no listing holds name unused. */
bool fs_la_answer (Fs *fs, fuse_req_t req, uint64_t parent, const char *name, size_t len);
/* The server answered a LOOKUP in parent with an entry: counts towards listing parent. */
void fs_la_missed (Fs *fs, uint64_t parent);
/* Something may change (a mutating request, a notification): every listing that could still
 * answer is dropped, and its directory is not listed again for a while. */
void fs_la_invalidate (Fs *fs);
/* A reply to one of the look-ahead's own requests (p->la). */
void fs_la_reply (Fs *fs, FsPending *p, const uint8_t *payload, size_t len);
/* Drops the listings that are older than the attribute timeout; returns when (fs_now_ms) the
 * next one will be, or -1. */
int64_t fs_la_expire (Fs *fs, int64_t now);

/* replies.c */
/* An FsEntry for the kernel, cached for timeout seconds. */
void fs_entry_param (const Fs *fs, const FsEntry *e, double timeout, struct fuse_entry_param *ret);
/* Checks count dirents (with entries for READDIRPLUS) and that nothing follows them. */
bool fs_dirents_valid (FsReader r, uint32_t count, bool plus);
/* Gives back the lookups of READDIRPLUS entries [from, count) read from r. */
void fs_forget_dirents (Fs *fs, FsReader r, uint32_t from, uint32_t count);
/* Answers the kernel for a reply to p (which the caller frees afterwards). */
void fs_reply_complete (Fs *fs, FsPending *p, const uint8_t *payload, size_t len);
/* Answers the kernel with an error for p. */
void fs_reply_fail (Fs *fs, FsPending *p, int errnum);
