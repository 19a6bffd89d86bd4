/* netmux.c — channels over one stream (see netmux.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "netmux.h"

#include "proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define OUT_MAX (4u * 1024u * 1024u) /* queued frames to the peer */
/* Above OUT_MAX: room for what one step may still add (an open with its initial data, one DATA
 * frame, and the small CREDIT/CLOSE frames of every channel). */
#define OUT_SLACK (NETMUX_WINDOW + 2 * (NETMUX_CHUNK + PROTO_HEADER_SIZE) + 65536)

typedef struct {
        uint32_t id;
        int fd;
        uint32_t send_credit; /* bytes we may send to the peer */
        uint8_t *in; /* from the peer, not yet written to fd: at most NETMUX_WINDOW */
        size_t in_len;
        uint32_t uncredited; /* received and not yet credited back */
        uint32_t consumed; /* written to fd and not yet credited back */
        bool peer_eof, local_eof, shut_wr;
} Chan;

struct NetMux {
        int stream;
        NetMuxOpenFn on_open;
        void *user;
        ProtoDecoder dec;
        uint8_t *out;
        size_t out_len, out_cap;
        Chan *chans[NETMUX_MAX_CHANNELS];
        size_t n_chans;
        uint32_t next_id;
        uint64_t next_req;
        bool eof;
        NetMuxRequestFn on_request;
        NetMuxEventFn on_event;
        void *handler_user;
        uint64_t pending_id; /* our outstanding request, 0 when none */
        NetMuxResponseFn on_response;
        void *response_user;
        int event_status; /* < 0: an event handler asked netmux_poll to stop */
};

/* send() without SIGPIPE on sockets; write() for other streams (a virtio port). */
static ssize_t
xwrite (int fd, const void *buf, size_t n)
{
        ssize_t r = send (fd, buf, n, MSG_NOSIGNAL);

        if (r < 0 && errno == ENOTSOCK)
                r = write (fd, buf, n);
        return r;
}

static int
set_nonblock (int fd)
{
        int fl = fcntl (fd, F_GETFL);

        return fl < 0 || fcntl (fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
}

int
netmux_new (int stream_fd, NetMuxOpenFn on_open, void *user, NetMux **ret)
{
        NetMux *m = calloc (1, sizeof *m);
        int r = -ENOMEM;

        if (!m)
                return -ENOMEM;
        m->stream = stream_fd;
        m->on_open = on_open;
        m->user = user;
        m->next_id = 1;
        m->next_req = 1;
        m->out_cap = OUT_MAX + OUT_SLACK;
        m->out = malloc (m->out_cap);
        if (!m->out || (r = proto_decoder_init (&m->dec, NETMUX_CHUNK + 4096)) < 0 ||
            (r = set_nonblock (stream_fd)) < 0) {
                proto_decoder_clear (&m->dec);
                free (m->out);
                free (m);
                return r;
        }
        *ret = m;
        return 0;
}

static void
chan_free (Chan *c)
{
        if (c->fd >= 0)
                close (c->fd);
        free (c->in);
        free (c);
}

void
netmux_free (NetMux *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n_chans; i++)
                chan_free (m->chans[i]);
        proto_decoder_clear (&m->dec);
        free (m->out);
        free (m);
}

size_t
netmux_channels (const NetMux *m)
{
        return m->n_chans;
}

/* Frames out ------------------------------------------------------------------------------------- */

static void
queue (NetMux *m, uint8_t type, uint8_t flags, uint32_t channel, const void *p, size_t len)
{
        /* The callers check room first (out_len < OUT_MAX); cap leaves space for one frame. */
        proto_header_encode (m->out + m->out_len, type, flags, channel, (uint32_t) len);
        if (len)
                memcpy (m->out + m->out_len + PROTO_HEADER_SIZE, p, len);
        m->out_len += PROTO_HEADER_SIZE + len;
}

static void
queue_credit (NetMux *m, uint32_t channel, uint32_t n)
{
        uint8_t b[4];

        proto_put_u32 (b, n);
        queue (m, PROTO_FRAME_CREDIT, 0, channel, b, 4);
}

static bool
out_room (const NetMux *m)
{
        return m->out_len < OUT_MAX;
}

/* Channels --------------------------------------------------------------------------------------- */

static Chan *
find (NetMux *m, uint32_t id, size_t *ret_index)
{
        for (size_t i = 0; i < m->n_chans; i++) {
                if (m->chans[i]->id == id) {
                        if (ret_index)
                                *ret_index = i;
                        return m->chans[i];
                }
        }
        return NULL;
}

static void
drop (NetMux *m, size_t i, bool tell_peer)
{
        Chan *c = m->chans[i];

        if (tell_peer)
                queue (m, PROTO_FRAME_CLOSE, 0, c->id, NULL, 0);
        chan_free (c);
        m->chans[i] = m->chans[--m->n_chans];
}

static int
add (NetMux *m, uint32_t id, int fd, Chan **ret)
{
        Chan *c;
        int r;

        if (m->n_chans == NETMUX_MAX_CHANNELS)
                return -EBUSY;
        if ((r = set_nonblock (fd)) < 0)
                return r;
        c = calloc (1, sizeof *c);
        if (!c || !(c->in = malloc (NETMUX_WINDOW))) {
                free (c);
                return -ENOMEM;
        }
        c->id = id;
        c->fd = fd;
        c->send_credit = NETMUX_WINDOW;
        m->chans[m->n_chans++] = c;
        *ret = c;
        return 0;
}

int
netmux_open (NetMux *m, int fd, const void *initial, size_t len)
{
        Chan *c;
        cJSON *params, *req;
        uint8_t *buf = NULL;
        size_t blen;
        int r;

        if (m->next_id > PROTO_MAX_CHANNEL || len > NETMUX_WINDOW)
                return -ENOSPC;
        if (!out_room (m))
                return -EAGAIN;
        if ((r = add (m, m->next_id, fd, &c)) < 0)
                return r;
        params = cJSON_CreateObject ();
        cJSON_AddNumberToObject (params, "channel", c->id);
        req = proto_request_new (m->next_req++, "egress.open", params);
        r = req ? proto_frame_build_json (PROTO_FRAME_REQUEST, req, &buf, &blen) : -ENOMEM;
        cJSON_Delete (req);
        if (r < 0) {
                drop (m, m->n_chans - 1, false);
                return r;
        }
        memcpy (m->out + m->out_len, buf, blen); /* small; the queue has slack for it */
        m->out_len += blen;
        free (buf);
        m->next_id++;
        for (size_t off = 0; off < len; off += NETMUX_CHUNK) {
                size_t n = len - off < NETMUX_CHUNK ? len - off : NETMUX_CHUNK;

                queue (m, PROTO_FRAME_DATA, 0, c->id, (const uint8_t *) initial + off, n);
                c->send_credit -= (uint32_t) n;
        }
        return (int) c->id;
}

/* A small JSON frame (requests, responses, events); the queue has slack for it. */
static int
queue_json (NetMux *m, uint8_t type, cJSON *obj /* (transfer full) */)
{
        uint8_t *buf = NULL;
        size_t blen;
        int r = obj ? proto_frame_build_json (type, obj, &buf, &blen) : -ENOMEM;

        cJSON_Delete (obj);
        if (r < 0)
                return r;
        if (blen > 65536 || m->out_len + blen > m->out_cap) {
                free (buf);
                return -ENOBUFS;
        }
        memcpy (m->out + m->out_len, buf, blen);
        m->out_len += blen;
        free (buf);
        return 0;
}

void
netmux_set_handlers (NetMux *m, NetMuxRequestFn on_request, NetMuxEventFn on_event, void *user)
{
        m->on_request = on_request;
        m->on_event = on_event;
        m->handler_user = user;
}

int
netmux_request (
        NetMux *m, const char *method, cJSON *params, NetMuxResponseFn on_response, void *user)
{
        int r;

        if (m->pending_id) {
                cJSON_Delete (params);
                return -EBUSY;
        }
        r = queue_json (m, PROTO_FRAME_REQUEST, proto_request_new (m->next_req, method, params));
        if (r < 0)
                return r;
        m->pending_id = m->next_req++;
        m->on_response = on_response;
        m->response_user = user;
        return 0;
}

int
netmux_event (NetMux *m, const char *event, cJSON *data)
{
        return queue_json (m, PROTO_FRAME_EVENT, proto_event_new (event, data));
}

void
netmux_reset (NetMux *m)
{
        while (m->n_chans > 0)
                drop (m, m->n_chans - 1, false);
}

/* Frames in -------------------------------------------------------------------------------------- */

/* A request other than egress.open: the handler answers it. Takes obj. */
static int
other_request (NetMux *m, cJSON *obj, const char *method)
{
        const cJSON *params = NULL;
        cJSON *result;
        uint64_t id;
        int r;

        if (!m->on_request || proto_json_get_id (obj, &id) < 0 ||
            proto_json_get_object (obj, "params", &params) == -EINVAL) {
                cJSON_Delete (obj);
                return -EPROTO;
        }
        result = m->on_request (m->handler_user, m, method, params);
        cJSON_Delete (obj);
        if (!result)
                return -EPROTO;
        r = queue_json (m, PROTO_FRAME_RESPONSE, proto_response_new (id, result));
        return r < 0 ? -EPROTO : 0;
}

static int
on_response (NetMux *m, const ProtoFrame *f)
{
        cJSON *obj = NULL;
        const cJSON *result = NULL, *error = NULL;
        uint64_t id;

        if (proto_json_parse (f->payload, f->length, &obj) < 0)
                return -EPROTO;
        if (proto_json_get_id (obj, &id) < 0 || !m->pending_id || id != m->pending_id ||
            (proto_json_get_object (obj, "result", &result) < 0 &&
             proto_json_get_object (obj, "error", &error) < 0)) {
                cJSON_Delete (obj);
                return -EPROTO;
        }
        m->pending_id = 0;
        if (m->on_response)
                m->on_response (m->response_user, result, error);
        cJSON_Delete (obj);
        return 0;
}

static int
on_event_frame (NetMux *m, const ProtoFrame *f)
{
        cJSON *obj = NULL;
        const char *event = NULL;
        const cJSON *data = NULL;
        int r;

        if (!m->on_event || proto_json_parse (f->payload, f->length, &obj) < 0)
                return -EPROTO;
        if (proto_json_get_string (obj, "event", 64, &event) < 0 ||
            proto_json_get_object (obj, "params", &data) == -EINVAL) {
                cJSON_Delete (obj);
                return -EPROTO;
        }
        r = m->on_event (m->handler_user, m, event, data);
        cJSON_Delete (obj);
        if (r < 0)
                m->event_status = r;
        return 0;
}

static int
on_request (NetMux *m, const ProtoFrame *f)
{
        cJSON *obj = NULL;
        const char *method = NULL;
        const cJSON *params = NULL;
        int64_t id = 0;
        Chan *c;
        int fd;

        if (proto_json_parse (f->payload, f->length, &obj) < 0)
                return -EPROTO;
        if (proto_json_get_string (obj, "method", 32, &method) == 0 &&
            strcmp (method, "egress.open") != 0)
                return other_request (m, obj, method);
        if (!m->on_open || proto_json_get_string (obj, "method", 32, &method) < 0 ||
            proto_json_get_object (obj, "params", &params) < 0 ||
            proto_json_get_int (params, "channel", 1, PROTO_MAX_CHANNEL, &id) < 0) {
                cJSON_Delete (obj);
                return -EPROTO;
        }
        cJSON_Delete (obj);
        if (find (m, (uint32_t) id, NULL))
                return -EPROTO; /* ids are never reused */
        fd = m->on_open (m->user, (uint32_t) id);
        if (fd < 0 || add (m, (uint32_t) id, fd, &c) < 0) {
                if (fd >= 0)
                        close (fd);
                queue (m, PROTO_FRAME_CLOSE, 0, (uint32_t) id, NULL, 0);
        }
        return 0;
}

static int
on_data (NetMux *m, const ProtoFrame *f)
{
        Chan *c = find (m, f->channel, NULL);

        if (!c)
                return 0; /* raced with a CLOSE */
        if (c->peer_eof || c->uncredited + f->length > NETMUX_WINDOW)
                return -EPROTO; /* beyond the credit we granted */
        memcpy (c->in + c->in_len, f->payload, f->length);
        c->in_len += f->length;
        c->uncredited += f->length;
        if (f->flags & PROTO_DATA_EOF)
                c->peer_eof = true;
        return 0;
}

static int
on_frame (NetMux *m, const ProtoFrame *f)
{
        Chan *c;
        size_t i;

        switch (f->type) {
        case PROTO_FRAME_REQUEST:
                return on_request (m, f);
        case PROTO_FRAME_RESPONSE:
                return on_response (m, f);
        case PROTO_FRAME_EVENT:
                return on_event_frame (m, f);
        case PROTO_FRAME_DATA:
                return on_data (m, f);
        case PROTO_FRAME_CREDIT:
                if ((c = find (m, f->channel, NULL))) {
                        uint64_t credit = (uint64_t) c->send_credit + proto_get_u32 (f->payload);

                        if (credit > NETMUX_WINDOW)
                                return -EPROTO;
                        c->send_credit = (uint32_t) credit;
                }
                return 0;
        case PROTO_FRAME_CLOSE:
                if (find (m, f->channel, &i))
                        drop (m, i, false);
                return 0;
        default:
                return -EPROTO;
        }
}

/* Pumping ---------------------------------------------------------------------------------------- */

/* Handles the frames already received; stops while the out queue is full (answers need room)
 * and resumes on the next call. */
static int
decode_pending (NetMux *m)
{
        ProtoFrame f;
        int r;

        while (out_room (m) && (r = proto_decoder_next (&m->dec, &f)) != 0) {
                if (r < 0 || on_frame (m, &f) < 0)
                        return -EPROTO;
        }
        return 0;
}

static int
read_stream (NetMux *m)
{
        size_t room;
        uint8_t *space = proto_decoder_space (&m->dec, &room);
        ssize_t n = room ? read (m->stream, space, room) : 0;

        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -EPIPE;
        if (n == 0 && room) {
                m->eof = true;
                return -EPIPE;
        }
        proto_decoder_commit (&m->dec, (size_t) n);
        return decode_pending (m);
}

static int
write_stream (NetMux *m)
{
        ssize_t n = xwrite (m->stream, m->out, m->out_len);

        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -EPIPE;
        memmove (m->out, m->out + n, m->out_len - (size_t) n);
        m->out_len -= (size_t) n;
        return 0;
}

/* fd -> peer */
static bool
pump_local (NetMux *m, Chan *c)
{
        uint8_t buf[NETMUX_CHUNK];
        size_t want = c->send_credit < sizeof buf ? c->send_credit : sizeof buf;
        ssize_t n = read (c->fd, buf, want);

        if (n < 0)
                return errno == EAGAIN || errno == EINTR;
        if (n == 0) {
                c->local_eof = true;
                queue (m, PROTO_FRAME_DATA, PROTO_DATA_EOF, c->id, NULL, 0);
                return true;
        }
        queue (m, PROTO_FRAME_DATA, 0, c->id, buf, (size_t) n);
        c->send_credit -= (uint32_t) n;
        return true;
}

/* peer -> fd */
static bool
pump_peer (NetMux *m, Chan *c)
{
        ssize_t n = c->in_len ? xwrite (c->fd, c->in, c->in_len) : 0;

        if (n < 0)
                return errno == EAGAIN || errno == EINTR;
        memmove (c->in, c->in + n, c->in_len - (size_t) n);
        c->in_len -= (size_t) n;
        c->consumed += (uint32_t) n;
        if (c->consumed >= NETMUX_WINDOW / 4 || (c->in_len == 0 && c->consumed > 0)) {
                queue_credit (m, c->id, c->consumed);
                c->uncredited -= c->consumed;
                c->consumed = 0;
        }
        if (c->in_len == 0 && c->peer_eof && !c->shut_wr) {
                shutdown (c->fd, SHUT_WR);
                c->shut_wr = true;
        }
        return true;
}

int
netmux_poll (NetMux *m, struct pollfd *extra, size_t n_extra, int timeout_ms)
{
        struct pollfd fds[1 + NETMUX_MAX_CHANNELS + 64];
        size_t n = 0, base;
        int r = 0;

        if (n_extra > 64)
                return -EINVAL;
        if ((r = decode_pending (m)) < 0)
                return r;
        fds[n++] = (struct pollfd){
                m->stream, (short) ((out_room (m) ? POLLIN : 0) | (m->out_len ? POLLOUT : 0)), 0
        };
        for (size_t i = 0; i < m->n_chans; i++) {
                Chan *c = m->chans[i];
                short ev = 0;

                if (!c->local_eof && c->send_credit > 0 && out_room (m))
                        ev |= POLLIN;
                /* also to pass on a half-close that came after the last byte */
                if (c->in_len > 0 || (c->peer_eof && !c->shut_wr))
                        ev |= POLLOUT;
                fds[n++] = (struct pollfd){ c->fd, ev, 0 };
        }
        base = n;
        if (n_extra) /* extra may be NULL then */
                memcpy (fds + n, extra, n_extra * sizeof *extra);
        n += n_extra;
        if (poll (fds, (nfds_t) n, timeout_ms) < 0)
                return errno == EINTR ? 0 : -errno;
        if (n_extra)
                memcpy (extra, fds + base, n_extra * sizeof *extra);
        /* Channels first (indexes match fds until one is dropped: walk backwards). */
        for (size_t i = m->n_chans; i-- > 0;) {
                Chan *c = m->chans[i];
                short re = fds[1 + i].revents;
                bool ok = true;

                if (re & (POLLOUT | POLLERR))
                        ok = pump_peer (m, c);
                if (ok && (re & (POLLIN | POLLHUP | POLLERR)) && !c->local_eof && c->send_credit &&
                    out_room (m))
                        ok = pump_local (m, c);
                if (!ok || (c->local_eof && c->peer_eof && c->in_len == 0))
                        drop (m, i, !ok);
        }
        if (fds[0].revents & POLLOUT)
                r = write_stream (m);
        if (r == 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
                r = read_stream (m);
        if (r == 0 && m->out_len)
                r = write_stream (m);
        if (r == 0 && m->event_status < 0)
                r = m->event_status;
        return r;
}

int
netmux_feed (NetMux *m, const void *data, size_t len)
{
        const uint8_t *p = data;
        int r = 0;

        while (len > 0 && r == 0) {
                size_t n = proto_decoder_feed (&m->dec, p, len);

                p += n;
                len -= n;
                r = decode_pending (m);
                m->out_len = 0; /* nobody reads the answers here */
                if (n == 0 && r == 0 && len > 0)
                        return -EPROTO; /* the decoder is full of frames it cannot take */
        }
        return r;
}
