/* corral-task-record.h — what the app remembers about each task, outside its VM folder.
 *
 * A task's workspace (its VM and the VM folder) can be removed — `corralctl vm rm`, `corralctl
 * gc`, a libvirt clean-up — while the person still expects to find the task under Earlier
 * Tasks. So the app keeps one small record per task in
 * $XDG_STATE_HOME/corral/tasks/VM_NAME.json: the folder, the mode, the image, the VM's size,
 * the network policy it started with and the id of its agent session (whose transcript lives in
 * $XDG_STATE_HOME/corral/sessions/). With it a removed workspace is made again, the same folder
 * shared the same way, and the conversation goes on.
 *
 * Records are read back as untrusted files: bounded in size, every field validated; a damaged
 * record is skipped in the list and explained when opened. Writes are atomic and private
 * (0600 in a 0700 folder) and serialised within the process.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-launcher.h"

G_BEGIN_DECLS

#define CORRAL_TASK_RECORD_MAX_BYTES (64 * 1024)
#define CORRAL_TASK_RECORD_MAX_RULES 256
#define CORRAL_TASK_RECORD_MAX_TITLE 200

typedef struct {
        char *vm_name;
        CorralTaskConfig *config;
        char *session_id; /* (nullable) the assistant session of the task, once it has one */
        /* (nullable) what the person calls the task: their first request, or a name they gave
         * it; at most CORRAL_TASK_RECORD_MAX_TITLE bytes of one line of text. */
        char *title;
        gint64 created; /* seconds since the epoch */
} CorralTaskRecord;

void corral_task_record_free (CorralTaskRecord *record);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralTaskRecord, corral_task_record_free)

/* (transfer full) $XDG_STATE_HOME/corral/tasks */
char *corral_task_record_dir (void);

/* Writes the record. A session id or a title already on disk is kept when the record's is NULL
 * (the assistant may record its session, or the person's first request, first). Blocking: call from a worker thread. */
gboolean corral_task_record_save (const CorralTaskRecord *record, GError **error);

/* (transfer full) the record of VM_NAME; G_IO_ERROR_NOT_FOUND when there is none,
 * G_IO_ERROR_INVALID_DATA (with what is wrong) when it is damaged. Blocking. */
CorralTaskRecord *corral_task_record_load (const char *vm_name, GError **error);

/* Records SESSION_ID for an existing record. Blocking. */
gboolean
corral_task_record_set_session (const char *vm_name, const char *session_id, GError **error);

/* (transfer full) text made fit to be a task's title: one line, no control characters, cut at
 * a character boundary to CORRAL_TASK_RECORD_MAX_TITLE bytes (with "…"), blanks trimmed; NULL
 * when nothing is left. */
char *corral_task_record_make_title (const char *text);

/* Names the task (title as corral_task_record_make_title leaves it; NULL or blank forgets the
 * name). With only_if_untitled, a task that has a title keeps it (the first request names a
 * task, later ones do not). Blocking. */
gboolean corral_task_record_set_title (const char *vm_name,
                                       const char *title,
                                       gboolean only_if_untitled,
                                       GError **error);

/* Forgets the task (its workspace and transcript are not touched). Blocking. */
gboolean corral_task_record_remove (const char *vm_name, GError **error);

/* (transfer full) (element-type CorralTaskRecord) every readable record, newest first; damaged
 * ones are skipped. Blocking. */
GPtrArray *corral_task_record_list (void);

/* Parsing and printing, for tests and fuzzing. (transfer full) */
CorralTaskRecord *corral_task_record_from_json (const char *text, gsize len, GError **error);
char *corral_task_record_to_json (const CorralTaskRecord *record);

G_END_DECLS
