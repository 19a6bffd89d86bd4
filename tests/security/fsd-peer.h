/* fsd-peer.h — a hostile guest's end of a real corral-fsd process: it spawns the server on one
 * end of a socketpair, answers its HELLO, and then sends whatever frames a test wants, in any
 * order, reading replies only when the test says so.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

#include "fs.h"
#include "proto.h"

typedef struct {
        GSubprocess *process;
        GPid pid;
        int fd; /* our end of the channel */
        ProtoDecoder dec;
        char nonce[PROTO_NONCE_HEX_LEN + 1]; /* of the server's last HELLO we answered */
} FsdPeer;

/* Starts CORRAL_FSD_PATH with "--fd 3" and args (NULL-terminated), then completes the HELLO. */
FsdPeer *fsd_peer_start (const char *const *args);
/* Closes the channel and waits for the server to exit successfully. */
void fsd_peer_stop (FsdPeer *peer);
void fsd_peer_free (FsdPeer *peer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FsdPeer, fsd_peer_free)

/* Answers the server HELLO f as the guest's client does. */
void fsd_peer_answer (FsdPeer *peer, const ProtoFrame *f);
/* Encodes q as one FS_REQUEST frame on channel into out (appends). */
void fsd_peer_encode (GByteArray *out, uint32_t channel, const FsRequest *q);
/* Writes all of data to the server. */
void fsd_peer_write (FsdPeer *peer, const void *data, size_t len);
/* Sends one request and waits for its reply; returns 0 or -errno, the body in *body (borrowed
 * until the next call). */
int fsd_peer_call (FsdPeer *peer, uint32_t channel, const FsRequest *q, FsReader *body);
/* Blocks until the next frame arrives (payload borrowed until the next call). */
void fsd_peer_next (FsdPeer *peer, ProtoFrame *ret);
/* A value from /proc/PID/status in KiB ("VmHWM", "VmRSS"). */
guint64 fsd_peer_status_kib (FsdPeer *peer, const char *key);
