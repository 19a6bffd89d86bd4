/* llm-provider-private.h — the provider object and one streamed request (private to app/llm).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-policy.h"
#include "llm-provider.h"
#include "llm-sse.h"
#include "llm-wire.h"

#include <libsoup/soup.h>

G_BEGIN_DECLS

#define CORRAL_LLM_READ_SIZE 16384

struct _CorralLlmProvider {
        GObject parent_instance;
        CorralLlmProviderKind kind;
        const CorralLlmWire *wire;
        char *base_url;
        char *api_key;
        SoupSession *session;
        guint max_attempts;
        guint base_delay_ms;
        guint max_delay_ms;
        guint idle_timeout_ms;
        CorralLlmLimits limits;
        CorralPolicy *managed; /* the organisation's policy when the provider was made */
};

typedef struct CorralLlmRequest {
        CorralLlmProvider *self; /* unowned: the task holds it */
        GBytes *body;
        char *url;
        char *beta; /* nullable: the anthropic-beta header */
        CorralLlmEventFunc event_func;
        gpointer event_data;
        GDestroyNotify event_data_notify;
        GCancellable *user_cancellable; /* unowned: the task holds it */
        GCancellable *attempt_cancellable;
        gulong cancel_handler;
        guint attempt;
        SoupMessage *msg;
        GInputStream *stream;
        CorralSseParser *parser;
        gpointer decoder;
        GSource *idle_source;
        GSource *sleep_source;
        gboolean timed_out;
        gboolean body_started;
        gsize received;
        GError *event_error;
        char buf[CORRAL_LLM_READ_SIZE];
} CorralLlmRequest;

/* Takes nothing: the request copies what it needs. (transfer full) */
CorralLlmRequest *corral_llm_request_new (CorralLlmProvider *self,
                                          GBytes *body,
                                          CorralLlmEventFunc event_func,
                                          gpointer event_data,
                                          GDestroyNotify event_data_notify,
                                          GCancellable *cancellable);
void corral_llm_request_free (CorralLlmRequest *req);
/* Starts the first attempt of the task whose data is a CorralLlmRequest; takes the task ref. */
void corral_llm_request_start (GTask *task);

G_END_DECLS
