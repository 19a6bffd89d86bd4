/* netmux.h — many TCP-like connections over one byte stream, in the framing of proto/proto.h
 * (NET-PROTOCOL.md): a channel per connection, opened by a JSON REQUEST "egress.open", carrying
 * DATA (EOF flag for a half-close), CREDIT and CLOSE frames, with a fixed credit window per
 * channel and direction. Plain C (libc + proto), used by the in-VM defensive proxy and by the
 * host, so both sides pump bytes the same way.
 *
 * Memory is bounded: per channel at most NETMUX_WINDOW bytes wait in each direction, at most
 * NETMUX_MAX_CHANNELS channels, and the outgoing frame queue stops every reader when full.
 * Functions return 0 or a negative errno.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <cjson/cJSON.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#define NETMUX_WINDOW (256u * 1024u)
#define NETMUX_MAX_CHANNELS 128
#define NETMUX_CHUNK (64u * 1024u)

typedef struct NetMux NetMux;

/* The peer opened channel: return a connected stream fd for it (the mux owns it), or -errno
 * (the channel is closed). */
typedef int (*NetMuxOpenFn) (void *user, uint32_t channel);

/* stream_fd: the byte stream to the peer (the mux does not own it). on_open may be NULL (the
 * peer may not open channels: a REQUEST is a protocol error). */
int netmux_new (int stream_fd, NetMuxOpenFn on_open, void *user, NetMux **ret);
void netmux_free (NetMux *m);

/* Opens a channel for the connected fd (owned by the mux from now on), first sending initial. */
int netmux_open (NetMux *m, int fd, const void *initial, size_t len);

/* Polls the mux's fds plus extra (their revents are filled) for at most timeout_ms and pumps.
 * Returns 0, or -EPIPE when the stream ended, -EPROTO on a protocol violation. */
int netmux_poll (NetMux *m, struct pollfd *extra, size_t n_extra, int timeout_ms);

size_t netmux_channels (const NetMux *m);

/* The session handshake (NET-PROTOCOL.md "Sessions") rides on the same stream.
 *
 * on_request answers the peer's requests other than egress.open: it returns the result
 * (transfer full) or NULL to treat the request as a protocol violation. on_event receives the
 * peer's events; returning < 0 ends netmux_poll() with that value. Either may be NULL (such
 * frames are then violations). */
typedef cJSON *(*NetMuxRequestFn) (void *user, NetMux *m, const char *method, const cJSON *params);
typedef int (*NetMuxEventFn) (void *user, NetMux *m, const char *event, const cJSON *data);
void
netmux_set_handlers (NetMux *m, NetMuxRequestFn on_request, NetMuxEventFn on_event, void *user);

/* Sends one request (params: transfer full). Its response (result or error object) goes to
 * on_response once; only one request may be outstanding. A response that matches no
 * outstanding request is a violation. */
typedef void (*NetMuxResponseFn) (void *user, const cJSON *result, const cJSON *error);
int netmux_request (
        NetMux *m, const char *method, cJSON *params, NetMuxResponseFn on_response, void *user);

/* Sends an event (data: transfer full). */
int netmux_event (NetMux *m, const char *event, cJSON *data);

/* Drops every channel without telling the peer (a new peer instance starts afresh). */
void netmux_reset (NetMux *m);

/* Handles data as if it had been read from the stream (fuzzing and tests): 0, or -EPROTO. */
int netmux_feed (NetMux *m, const void *data, size_t len);
