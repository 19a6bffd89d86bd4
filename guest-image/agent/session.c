/* session.c — HELLO, the session rules and request dispatch.
 *
 * Until a valid host HELLO arrives every frame is ignored. A new HELLO ends the previous session:
 * channels, watches and waiters go, foreground processes are killed, background ones stay.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"

#include <errno.h>
#include <string.h>

static const struct {
        const char *name;
        MethodFunc func;
} methods[] = {
        { "exec.start", method_exec_start },
        { "exec.kill", method_exec_kill },
        { "exec.list", method_exec_list },
        { "exec.attach", method_exec_attach },
        { "exec.detach", method_exec_detach },
        { "exec.resize", method_exec_resize },
        { "wait.port", method_wait_port },
        { "wait.log", method_wait_log },
        { "file.read", method_file_read },
        { "file.write", method_file_write },
        { "file.stat", method_file_stat },
        { "file.list", method_file_list },
        { "file.mkdir", method_file_mkdir },
        { "file.move", method_file_move },
        { "file.remove", method_file_remove },
        { "watch.start", method_watch_start },
        { "watch.stop", method_watch_stop },
        { "info", method_info },
        { "system.poweroff", method_system_poweroff },
};

static const char *const features[] = { "exec",  "pty",  "background", "files",
                                        "watch", "wait", "info" };

void
agent_respond (Agent *a, uint64_t id, cJSON *result)
{
        /* Handlers bound their answers; should one still not fit, the host gets an error
         * instead of waiting forever. */
        if (agent_send_json (a, PROTO_FRAME_RESPONSE, proto_response_new (id, result)) == -EMSGSIZE)
                agent_respond_error (a, id, "too-large", "the answer does not fit in one frame",
                                     EMSGSIZE);
}

void
agent_respond_error (Agent *a, uint64_t id, const char *code, const char *message, int errnum)
{
        agent_send_json (a, PROTO_FRAME_RESPONSE,
                         proto_error_response_new (id, code, message, errnum));
}

void
agent_respond_errno (Agent *a, uint64_t id, int errnum, const char *message)
{
        agent_respond_error (a, id, proto_errno_code (errnum),
                             message ? message : strerror (errnum), errnum);
}

void
agent_emit (Agent *a, const char *event, cJSON *params)
{
        agent_send_json (a, PROTO_FRAME_EVENT, proto_event_new (event, params));
}

/* A request whose id cannot be read: answered with "id": null (as JSON-RPC does) so that the
 * refusal is visible; a host never has null outstanding and drops it. */
static void
respond_invalid_no_id (Agent *a, const char *message)
{
        cJSON *obj = cJSON_CreateObject ();
        cJSON *err = proto_error_new ("invalid-request", message, 0);

        if (!obj || !err || !cJSON_AddNullToObject (obj, "id") ||
            !cJSON_AddItemToObject (obj, "error", err)) {
                cJSON_Delete (err);
                cJSON_Delete (obj);
                return;
        }
        agent_send_json (a, PROTO_FRAME_RESPONSE, obj);
}

static void
handle_request (Agent *a, const ProtoFrame *f)
{
        cJSON *req = NULL;
        const cJSON *params = NULL;
        const char *method;
        uint64_t id;
        int r;

        if (proto_json_parse (f->payload, f->length, &req) < 0) {
                respond_invalid_no_id (a, "malformed request");
                return;
        }
        if (proto_json_get_id (req, &id) < 0) {
                respond_invalid_no_id (a, "missing or invalid id");
                goto out;
        }
        if (proto_json_get_string (req, "method", 256, &method) < 0) {
                agent_respond_error (a, id, "invalid-request", "missing or invalid method", 0);
                goto out;
        }
        r = proto_json_get_object (req, "params", &params);
        if (r == -EINVAL) {
                agent_respond_error (a, id, "invalid-request", "params must be an object", 0);
                goto out;
        }
        if (r == -ENOENT)
                params = NULL;

        for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
                if (strcmp (methods[i].name, method) == 0) {
                        cJSON *empty = params ? NULL : cJSON_CreateObject ();

                        if (!params && !empty) {
                                agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
                                goto out;
                        }
                        agent_debug ("request %llu: %s", (unsigned long long) id, method);
                        methods[i].func (a, id, params ? params : empty);
                        cJSON_Delete (empty);
                        goto out;
                }
        }
        agent_respond_error (a, id, "unknown-method", "no such method", 0);
out:
        cJSON_Delete (req);
}

void
session_end (Agent *a, const char *why)
{
        if (!a->in_session)
                return;
        agent_debug ("session %llu ends: %s", (unsigned long long) a->session_gen, why);
        channels_drop_all (a);
        waiters_free_all (a);
        watches_free_all (a);
        procs_session_end (a);
        agent_outq_drop_pending (a);
        a->in_session = false;
}

static cJSON *
hello_reply (Agent *a, const char *nonce, int64_t version)
{
        cJSON *obj = cJSON_CreateObject ();
        cJSON *feat;

        if (!obj)
                return NULL;
        json_add_number (obj, "version", (double) version);
        cJSON_AddStringToObject (obj, "role", "agent");
        cJSON_AddStringToObject (obj, "nonce", nonce);
        cJSON_AddStringToObject (obj, "agent_version", CORRAL_VERSION);
        json_add_number (obj, "window", a->window);
        json_add_number (obj, "max_payload", PROTO_MAX_PAYLOAD);
        cJSON_AddStringToObject (obj, "boot_id", a->boot_id);
        feat = cJSON_AddArrayToObject (obj, "features");
        for (size_t i = 0; feat && i < sizeof features / sizeof features[0]; i++)
                cJSON_AddItemToArray (feat, cJSON_CreateString (features[i]));
        return obj;
}

static void
handle_hello (Agent *a, const ProtoFrame *f)
{
        ProtoHello hello;
        cJSON *reply;
        int64_t v;

        if (proto_hello_parse (f, "host", &hello) < 0) {
                agent_log ("invalid HELLO ignored");
                return;
        }
        session_end (a, "new HELLO");
        a->session_gen++;
        v = hello.version < PROTO_VERSION ? hello.version : PROTO_VERSION;
        reply = hello_reply (a, hello.nonce, v);
        if (reply && (v < hello.min_version || v < PROTO_MIN_VERSION)) {
                cJSON_AddItemToObject (reply, "error",
                                       proto_error_new ("unsupported-version",
                                                        "no protocol version in common", 0));
                agent_send_json (a, PROTO_FRAME_HELLO, reply);
                agent_log ("HELLO with unsupported version %lld..%lld",
                           (long long) hello.min_version, (long long) hello.version);
        } else {
                agent_send_json (a, PROTO_FRAME_HELLO, reply);
                a->in_session = true;
                agent_debug ("session %llu starts", (unsigned long long) a->session_gen);
        }
        proto_hello_clear (&hello);
}

static void
handle_data (Agent *a, const ProtoFrame *f)
{
        Channel *c = channel_lookup (a, f->channel);
        unsigned stream = f->flags & PROTO_DATA_STREAM_MASK;

        if (!c)
                return; /* may race with an error or a CLOSE: dropped silently */
        if (f->length > c->in_credit || stream != PROTO_STREAM_STDIN) {
                agent_log ("channel %u: %s, closing it", c->id,
                           stream != PROTO_STREAM_STDIN ? "DATA on an output stream"
                                                        : "DATA beyond credit");
                channel_abort (a, c, true);
                return;
        }
        c->in_credit -= f->length;
        c->ops->data (a, c, stream, (f->flags & PROTO_DATA_EOF) != 0, f->payload, f->length);
}

static void
handle_credit (Agent *a, const ProtoFrame *f)
{
        Channel *c = channel_lookup (a, f->channel);
        uint64_t n = proto_get_u32 (f->payload);

        if (!c)
                return;
        /* A host may grant generously; keep the sum far from overflowing. */
        c->credit += n;
        if (c->credit > (1ull << 40))
                c->credit = 1ull << 40;
        c->ops->pump (a, c);
}

void
session_handle_frame (Agent *a, const ProtoFrame *f)
{
        if (f->type == PROTO_FRAME_HELLO) {
                handle_hello (a, f);
                return;
        }
        if (!a->in_session)
                return;

        switch (f->type) {
        case PROTO_FRAME_REQUEST:
                handle_request (a, f);
                break;
        case PROTO_FRAME_PING:
                agent_send_frame (a, PROTO_FRAME_PONG, 0, 0, f->payload, f->length);
                break;
        case PROTO_FRAME_DATA:
                handle_data (a, f);
                break;
        case PROTO_FRAME_CREDIT:
                handle_credit (a, f);
                break;
        case PROTO_FRAME_CLOSE: {
                Channel *c = channel_lookup (a, f->channel);

                if (c)
                        channel_abort (a, c, false);
                break;
        }
        default:
                /* RESPONSE, EVENT, PONG: the agent makes no requests. */
                break;
        }
}
