/* corral-chat-source.h — what drives the chat view: a GInterface that the assistant loop (or the
 * scripted demo source used by the tests) implements.
 *
 * The view calls send() when the person sends a message and stop() for the stop button. The
 * source reports back by emitting the interface's signals, with the corral_chat_source_emit_*()
 * helpers, on the main context the view runs on:
 *
 *   ::text-delta (const char *text)             assistant text as it streams
 *   ::reply-restarted ()                        a retry: drop the text of the current reply
 *   ::tool-started (CorralChatTool *tool)       a tool call begins (card shown, spinner)
 *   ::tool-finished (CorralChatTool *tool)      ... and ends (output, files, network, blocked);
 *                                               matched to its card by tool->id
 *   ::approval-requested (CorralChatApproval *) the assistant asks for something the sandbox
 *                                               forbids; the view asks the person and answers
 *                                               with corral_chat_approval_respond()
 *   ::notice (const char *text)                 a remark shown in the transcript
 *   ::help-requested (const char *request)      computer use: the assistant asks the person to
 *                                               take the screen (a sign-in...); NULL when it
 *                                               no longer asks
 *   ::task-finished (const char *error)         the task is over; error is NULL, or what went
 *                                               wrong in words for people ("Stopped." included)
 *
 * The assistant loop's CorralAssistantSession signals map one to one (CorralAssistantToolCard to
 * CorralChatTool, CorralAssistantApproval to CorralChatApproval with the same answers).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

#include "corral-share-mode.h"

G_BEGIN_DECLS

/* One tool call, as the view shows it. Refcounted; the source fills it in, the view reads it. */
typedef struct {
        char *id; /* matches tool-started and tool-finished */
        char *tool; /* "shell", "create_file", "mcp: files__read" */
        char *title; /* one line: the command, the file name (corralctl's words) */
        /* (nullable) shell: what the command does, in the assistant's plain words (its
         * "description"), one line; the card's sentence */
        char *summary;
        /* (nullable) request_approval: "denied", "done", "failed" or "cancelled" */
        char *outcome;
        char *command; /* (nullable) shell command */
        char *output; /* (nullable) once finished */
        int exit_code; /* shell: -1 unless it exited normally */
        gboolean is_error;
        gboolean finished;
        GPtrArray *files_read; /* (element-type utf8) VM paths */
        GPtrArray *files_changed; /* (element-type utf8) VM paths */
        GPtrArray *network; /* (element-type utf8) "GET pypi.org:443 denied (default-deny)" */
        GPtrArray *blocked; /* (element-type utf8) what the sandbox refused, explained */
        /* (nullable) computer use: the screenshot the action returned (PNG or JPEG, what the
         * model saw) and where on it the action pointed */
        GBytes *image;
        gboolean has_point;
        guint point_x, point_y;
} CorralChatTool;

#define CORRAL_TYPE_CHAT_TOOL (corral_chat_tool_get_type ())
GType corral_chat_tool_get_type (void);
/* (transfer full) an unfinished tool call with exit_code -1 and empty arrays */
CorralChatTool *corral_chat_tool_new (const char *id, const char *tool, const char *title);
CorralChatTool *corral_chat_tool_ref (CorralChatTool *tool);
void corral_chat_tool_unref (CorralChatTool *tool);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralChatTool, corral_chat_tool_unref)

typedef enum {
        CORRAL_CHAT_APPROVAL_DELETE, /* target: a /workspace path */
        CORRAL_CHAT_APPROVAL_NETWORK, /* target: host or host:port */
} CorralChatApprovalKind;

/* Same values as CorralAssistantAnswer. */
typedef enum {
        CORRAL_CHAT_ANSWER_DENY,
        CORRAL_CHAT_ANSWER_ALLOW_ONCE, /* delete: this one file */
        CORRAL_CHAT_ANSWER_ALLOW_TASK, /* network: until the task ends */
        CORRAL_CHAT_ANSWER_ALLOW_ALWAYS, /* network: a permanent rule in the VM's policy */
} CorralChatAnswer;

typedef void (*CorralChatApprovalFunc) (CorralChatAnswer answer, gpointer user_data);

typedef struct _CorralChatApproval CorralChatApproval;

#define CORRAL_TYPE_CHAT_APPROVAL (corral_chat_approval_get_type ())
GType corral_chat_approval_get_type (void);
/* func is called once, with the first answer; an approval dropped unanswered is denied.
 * reason: (nullable) the assistant's words, shown as plain text. (transfer full) */
CorralChatApproval *corral_chat_approval_new (CorralChatApprovalKind kind,
                                              const char *target,
                                              const char *reason,
                                              CorralChatApprovalFunc func,
                                              gpointer user_data,
                                              GDestroyNotify destroy);
CorralChatApproval *corral_chat_approval_ref (CorralChatApproval *approval);
void corral_chat_approval_unref (CorralChatApproval *approval);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralChatApproval, corral_chat_approval_unref)
CorralChatApprovalKind corral_chat_approval_get_kind (CorralChatApproval *approval);
const char *corral_chat_approval_get_target (CorralChatApproval *approval);
const char *corral_chat_approval_get_reason (CorralChatApproval *approval);
/* Delete: the file the person is asked about, as the file server found it when the question
 * was put. Shown as plain text; the source has escaped whatever the assistant chose. */
typedef struct {
        char *share_name; /* /workspace/NAME in the VM */
        char *share_folder; /* the shared folder on this computer */
        FsMode mode; /* how it is shared */
        char *path; /* inside the shared folder: "notes/old.txt" */
        GFileType type; /* G_FILE_TYPE_REGULAR, _DIRECTORY or _SYMBOLIC_LINK */
} CorralChatApprovalFile;

/* Copies file. */
void corral_chat_approval_set_file (CorralChatApproval *approval,
                                    const CorralChatApprovalFile *file);
/* (nullable) (transfer none) NULL unless set */
const CorralChatApprovalFile *corral_chat_approval_get_file (CorralChatApproval *approval);
/* A warning for the person (network: the host leads to this computer or a local network). */
void corral_chat_approval_set_warning (CorralChatApproval *approval, const char *warning);
/* (nullable) */
const char *corral_chat_approval_get_warning (CorralChatApproval *approval);
gboolean corral_chat_approval_is_answered (CorralChatApproval *approval);
/* Answers once; later answers are ignored. */
void corral_chat_approval_respond (CorralChatApproval *approval, CorralChatAnswer answer);

#define CORRAL_TYPE_CHAT_SOURCE (corral_chat_source_get_type ())
G_DECLARE_INTERFACE (CorralChatSource, corral_chat_source, CORRAL, CHAT_SOURCE, GObject)

struct _CorralChatSourceInterface {
        GTypeInterface parent_iface;

        /* Starts a task (or continues the conversation) with the person's text. */
        void (*send) (CorralChatSource *self, const char *text);
        /* Stops the running task: the running command is killed; task-finished follows. */
        void (*stop) (CorralChatSource *self);
        /* (optional) The last task ended on a passing failure (the provider could not be
         * reached, was overloaded...): TRUE until retry or send. */
        gboolean (*can_retry) (CorralChatSource *self);
        /* (optional) Goes on with the task where the failure stopped it. */
        void (*retry) (CorralChatSource *self);
        /* (optional) The person will not take the screen now (help-requested). */
        void (*decline_help) (CorralChatSource *self);
};

void corral_chat_source_send (CorralChatSource *self, const char *text);
void corral_chat_source_stop (CorralChatSource *self);
gboolean corral_chat_source_can_retry (CorralChatSource *self);
void corral_chat_source_retry (CorralChatSource *self);
void corral_chat_source_decline_help (CorralChatSource *self);

/* For implementations: emit the interface's signals. */
void corral_chat_source_emit_text_delta (CorralChatSource *self, const char *text);
void corral_chat_source_emit_reply_restarted (CorralChatSource *self);
void corral_chat_source_emit_tool_started (CorralChatSource *self, CorralChatTool *tool);
void corral_chat_source_emit_tool_finished (CorralChatSource *self, CorralChatTool *tool);
void corral_chat_source_emit_approval_requested (CorralChatSource *self,
                                                 CorralChatApproval *approval);
void corral_chat_source_emit_notice (CorralChatSource *self, const char *text);
void corral_chat_source_emit_task_finished (CorralChatSource *self, const char *error);
void corral_chat_source_emit_help_requested (CorralChatSource *self, const char *request);

G_END_DECLS
