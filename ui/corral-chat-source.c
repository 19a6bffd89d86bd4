/* corral-chat-source.c — the interface between the chat view and what drives it.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-chat-source.h"

/* Tool calls ---------------------------------------------------------------------------------- */

G_DEFINE_BOXED_TYPE (CorralChatTool, corral_chat_tool, corral_chat_tool_ref, corral_chat_tool_unref)

static void
chat_tool_clear (CorralChatTool *tool)
{
        g_free (tool->id);
        g_free (tool->tool);
        g_free (tool->title);
        g_free (tool->command);
        g_free (tool->summary);
        g_free (tool->outcome);
        g_free (tool->output);
        g_ptr_array_unref (tool->files_read);
        g_ptr_array_unref (tool->files_changed);
        g_ptr_array_unref (tool->network);
        g_ptr_array_unref (tool->blocked);
        g_clear_pointer (&tool->image, g_bytes_unref);
}

CorralChatTool *
corral_chat_tool_new (const char *id, const char *tool, const char *title)
{
        CorralChatTool *self = g_atomic_rc_box_new0 (CorralChatTool);

        self->id = g_strdup (id);
        self->tool = g_strdup (tool);
        self->title = g_strdup (title);
        self->exit_code = -1;
        self->files_read = g_ptr_array_new_with_free_func (g_free);
        self->files_changed = g_ptr_array_new_with_free_func (g_free);
        self->network = g_ptr_array_new_with_free_func (g_free);
        self->blocked = g_ptr_array_new_with_free_func (g_free);
        return self;
}

CorralChatTool *
corral_chat_tool_ref (CorralChatTool *tool)
{
        g_return_val_if_fail (tool != NULL, NULL);
        return g_atomic_rc_box_acquire (tool);
}

void
corral_chat_tool_unref (CorralChatTool *tool)
{
        if (tool)
                g_atomic_rc_box_release_full (tool, (GDestroyNotify) chat_tool_clear);
}

/* Approvals ----------------------------------------------------------------------------------- */

struct _CorralChatApproval {
        CorralChatApprovalKind kind;
        char *target;
        char *reason;
        CorralChatApprovalFunc func;
        gpointer user_data;
        GDestroyNotify destroy;
        gboolean answered;
        CorralChatApprovalFile *file;
        char *warning;
};

G_DEFINE_BOXED_TYPE (CorralChatApproval,
                     corral_chat_approval,
                     corral_chat_approval_ref,
                     corral_chat_approval_unref)

CorralChatApproval *
corral_chat_approval_new (CorralChatApprovalKind kind,
                          const char *target,
                          const char *reason,
                          CorralChatApprovalFunc func,
                          gpointer user_data,
                          GDestroyNotify destroy)
{
        CorralChatApproval *self = g_atomic_rc_box_new0 (CorralChatApproval);

        g_return_val_if_fail (target != NULL, NULL);
        self->kind = kind;
        self->target = g_strdup (target);
        self->reason = g_strdup (reason);
        self->func = func;
        self->user_data = user_data;
        self->destroy = destroy;
        return self;
}

CorralChatApproval *
corral_chat_approval_ref (CorralChatApproval *approval)
{
        g_return_val_if_fail (approval != NULL, NULL);
        return g_atomic_rc_box_acquire (approval);
}

static void
chat_approval_file_free (CorralChatApprovalFile *file)
{
        if (!file)
                return;
        g_free (file->share_name);
        g_free (file->share_folder);
        g_free (file->path);
        g_free (file);
}

static void
chat_approval_clear (CorralChatApproval *self)
{
        /* Nobody answered: that is a no. */
        if (!self->answered && self->func)
                self->func (CORRAL_CHAT_ANSWER_DENY, self->user_data);
        if (self->destroy)
                self->destroy (self->user_data);
        g_free (self->target);
        g_free (self->reason);
        g_free (self->warning);
        chat_approval_file_free (self->file);
}

void
corral_chat_approval_unref (CorralChatApproval *approval)
{
        if (approval)
                g_atomic_rc_box_release_full (approval, (GDestroyNotify) chat_approval_clear);
}

CorralChatApprovalKind
corral_chat_approval_get_kind (CorralChatApproval *approval)
{
        return approval->kind;
}

const char *
corral_chat_approval_get_target (CorralChatApproval *approval)
{
        return approval->target;
}

const char *
corral_chat_approval_get_reason (CorralChatApproval *approval)
{
        return approval->reason;
}

void
corral_chat_approval_set_file (CorralChatApproval *approval, const CorralChatApprovalFile *file)
{
        CorralChatApprovalFile *copy = g_new0 (CorralChatApprovalFile, 1);

        g_return_if_fail (approval != NULL && file != NULL);
        copy->share_name = g_strdup (file->share_name);
        copy->share_folder = g_strdup (file->share_folder);
        copy->mode = file->mode;
        copy->path = g_strdup (file->path);
        copy->type = file->type;
        chat_approval_file_free (approval->file);
        approval->file = copy;
}

const CorralChatApprovalFile *
corral_chat_approval_get_file (CorralChatApproval *approval)
{
        return approval->file;
}

void
corral_chat_approval_set_warning (CorralChatApproval *approval, const char *warning)
{
        g_return_if_fail (approval != NULL);
        g_free (approval->warning);
        approval->warning = g_strdup (warning);
}

const char *
corral_chat_approval_get_warning (CorralChatApproval *approval)
{
        return approval->warning;
}

gboolean
corral_chat_approval_is_answered (CorralChatApproval *approval)
{
        return approval->answered;
}

void
corral_chat_approval_respond (CorralChatApproval *approval, CorralChatAnswer answer)
{
        g_return_if_fail (approval != NULL);

        if (approval->answered)
                return;
        approval->answered = TRUE;
        if (approval->func)
                approval->func (answer, approval->user_data);
}

/* The interface ------------------------------------------------------------------------------- */

enum {
        SIGNAL_TEXT_DELTA,
        SIGNAL_REPLY_RESTARTED,
        SIGNAL_TOOL_STARTED,
        SIGNAL_TOOL_FINISHED,
        SIGNAL_APPROVAL_REQUESTED,
        SIGNAL_NOTICE,
        SIGNAL_TASK_FINISHED,
        SIGNAL_HELP_REQUESTED,
        N_SIGNALS
};

static guint signals[N_SIGNALS];

G_DEFINE_INTERFACE (CorralChatSource, corral_chat_source, G_TYPE_OBJECT)

static void
corral_chat_source_default_init (CorralChatSourceInterface *iface)
{
        GType type = G_TYPE_FROM_INTERFACE (iface);

        signals[SIGNAL_TEXT_DELTA] = g_signal_new ("text-delta", type, G_SIGNAL_RUN_LAST, 0, NULL,
                                                   NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
        signals[SIGNAL_REPLY_RESTARTED] = g_signal_new ("reply-restarted", type, G_SIGNAL_RUN_LAST,
                                                        0, NULL, NULL, NULL, G_TYPE_NONE, 0);
        signals[SIGNAL_TOOL_STARTED] =
                g_signal_new ("tool-started", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                              G_TYPE_NONE, 1, CORRAL_TYPE_CHAT_TOOL);
        signals[SIGNAL_TOOL_FINISHED] =
                g_signal_new ("tool-finished", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                              G_TYPE_NONE, 1, CORRAL_TYPE_CHAT_TOOL);
        signals[SIGNAL_APPROVAL_REQUESTED] =
                g_signal_new ("approval-requested", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                              G_TYPE_NONE, 1, CORRAL_TYPE_CHAT_APPROVAL);
        signals[SIGNAL_NOTICE] = g_signal_new ("notice", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                               NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
        signals[SIGNAL_HELP_REQUESTED] =
                g_signal_new ("help-requested", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                              G_TYPE_NONE, 1, G_TYPE_STRING);
        signals[SIGNAL_TASK_FINISHED] =
                g_signal_new ("task-finished", type, G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                              G_TYPE_NONE, 1, G_TYPE_STRING);
}

void
corral_chat_source_send (CorralChatSource *self, const char *text)
{
        g_return_if_fail (CORRAL_IS_CHAT_SOURCE (self));
        g_return_if_fail (text != NULL);
        CORRAL_CHAT_SOURCE_GET_IFACE (self)->send (self, text);
}

void
corral_chat_source_stop (CorralChatSource *self)
{
        g_return_if_fail (CORRAL_IS_CHAT_SOURCE (self));
        CORRAL_CHAT_SOURCE_GET_IFACE (self)->stop (self);
}

gboolean
corral_chat_source_can_retry (CorralChatSource *self)
{
        CorralChatSourceInterface *iface;

        g_return_val_if_fail (CORRAL_IS_CHAT_SOURCE (self), FALSE);
        iface = CORRAL_CHAT_SOURCE_GET_IFACE (self);
        return iface->can_retry && iface->retry && iface->can_retry (self);
}

void
corral_chat_source_retry (CorralChatSource *self)
{
        g_return_if_fail (CORRAL_IS_CHAT_SOURCE (self));
        if (corral_chat_source_can_retry (self))
                CORRAL_CHAT_SOURCE_GET_IFACE (self)->retry (self);
}

void
corral_chat_source_decline_help (CorralChatSource *self)
{
        g_return_if_fail (CORRAL_IS_CHAT_SOURCE (self));
        if (CORRAL_CHAT_SOURCE_GET_IFACE (self)->decline_help)
                CORRAL_CHAT_SOURCE_GET_IFACE (self)->decline_help (self);
}

void
corral_chat_source_emit_help_requested (CorralChatSource *self, const char *request)
{
        g_signal_emit (self, signals[SIGNAL_HELP_REQUESTED], 0, request);
}

void
corral_chat_source_emit_text_delta (CorralChatSource *self, const char *text)
{
        g_signal_emit (self, signals[SIGNAL_TEXT_DELTA], 0, text);
}

void
corral_chat_source_emit_reply_restarted (CorralChatSource *self)
{
        g_signal_emit (self, signals[SIGNAL_REPLY_RESTARTED], 0);
}

void
corral_chat_source_emit_tool_started (CorralChatSource *self, CorralChatTool *tool)
{
        g_signal_emit (self, signals[SIGNAL_TOOL_STARTED], 0, tool);
}

void
corral_chat_source_emit_tool_finished (CorralChatSource *self, CorralChatTool *tool)
{
        g_signal_emit (self, signals[SIGNAL_TOOL_FINISHED], 0, tool);
}

void
corral_chat_source_emit_approval_requested (CorralChatSource *self, CorralChatApproval *approval)
{
        g_signal_emit (self, signals[SIGNAL_APPROVAL_REQUESTED], 0, approval);
}

void
corral_chat_source_emit_notice (CorralChatSource *self, const char *text)
{
        g_signal_emit (self, signals[SIGNAL_NOTICE], 0, text);
}

void
corral_chat_source_emit_task_finished (CorralChatSource *self, const char *error)
{
        g_signal_emit (self, signals[SIGNAL_TASK_FINISHED], 0, error);
}
