/* corral-launcher.h — what starts, suspends and lists the workspaces (VMs) behind tasks.
 *
 * The window talks to a CorralLauncher, never to libvirt: the app uses CorralVmLauncher
 * (corral-vm-launcher.h); the UI tests replace it with a scripted one, like libvirt's fake
 * drivers, so they need no VM.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

#include "corral-share-mode.h"

G_BEGIN_DECLS

/* What the person chose for a new task. */
typedef struct {
        char *folder; /* absolute path of the shared folder */
        FsMode mode;
        char *image; /* "minimal", "standard" */
        guint memory_mib;
        guint vcpus;
        guint kept_space_mib; /* 0: the default */
        char *network_preset; /* "none", "package-managers", "allowlist", "open-web" */
        char **network_allow; /* (nullable) */
        /* The assistant's commands run without the VM's second wall (SECURITY.md A7, A8,
         * A10); only the person turns it on. */
        gboolean unconfined_commands;
        /* The assistant gets a screen in the VM (computer use): off unless the person turns it
         * on for this task, and refused where the organisation turned it off. */
        gboolean computer_use;
} CorralTaskConfig;

CorralTaskConfig *corral_task_config_copy (const CorralTaskConfig *config);
void corral_task_config_free (CorralTaskConfig *config);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralTaskConfig, corral_task_config_free)

typedef enum {
        CORRAL_LAUNCH_STAGE_PREPARE, /* "Preparing a safe workspace…" */
        CORRAL_LAUNCH_STAGE_IMAGE, /* building the image (first use) or checking it */
        CORRAL_LAUNCH_STAGE_BOOT, /* starting the VM */
        CORRAL_LAUNCH_STAGE_SHARE, /* the folder and the network */
        CORRAL_LAUNCH_STAGE_CONNECT, /* the guest agent answers */
        CORRAL_LAUNCH_N_STAGES,
} CorralLaunchStage;

/* fraction in [0, 1] within the stage, or < 0 when unknown; detail: (nullable) plain text. */
typedef void (*CorralLaunchProgressFunc) (CorralLaunchStage stage,
                                          double fraction,
                                          const char *detail,
                                          gpointer user_data);

typedef struct {
        char *vm_name;
        char *vm_dir; /* shares.json, audit.jsonl, egress.jsonl, egress-policy.json */
        char *accel; /* "kvm", "tcg" */
        /* (nullable) a connected CorralAgentClient, for the assistant loop */
        GObject *agent_client;
        /* (nullable) a new task's record could not be saved (corral-task-record.h): the task
         * runs, but will not be found among the earlier ones. */
        char *record_error;
} CorralLaunchResult;

void corral_launch_result_free (CorralLaunchResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralLaunchResult, corral_launch_result_free)

/* An earlier task's workspace, for the sessions list. */
typedef struct {
        char *vm_name;
        char *state; /* "running", "paused", "shut off"... (plain words, translated) */
        char *vm_dir; /* nullable */
} CorralSessionInfo;

void corral_session_info_free (CorralSessionInfo *info);

#define CORRAL_TYPE_LAUNCHER (corral_launcher_get_type ())
G_DECLARE_INTERFACE (CorralLauncher, corral_launcher, CORRAL, LAUNCHER, GObject)

struct _CorralLauncherInterface {
        GTypeInterface parent_iface;

        /* progress is called on the caller's main context until the callback runs. The
         * public corral_launcher_start_async() also saves the new task's record. */
        void (*start_async) (CorralLauncher *self,
                             const CorralTaskConfig *config,
                             CorralLaunchProgressFunc progress,
                             gpointer progress_data,
                             GCancellable *cancellable,
                             GAsyncReadyCallback callback,
                             gpointer user_data);
        CorralLaunchResult *(*start_finish) (CorralLauncher *self,
                                             GAsyncResult *result,
                                             GError **error);
        /* Pauses the VM so the task can continue later (never kills it). */
        void (*suspend_async) (CorralLauncher *self,
                               const char *vm_name,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data);
        gboolean (*suspend_finish) (CorralLauncher *self, GAsyncResult *result, GError **error);
        /* (element-type CorralSessionInfo) */
        void (*list_async) (CorralLauncher *self,
                            GCancellable *cancellable,
                            GAsyncReadyCallback callback,
                            gpointer user_data);
        GPtrArray *(*list_finish) (CorralLauncher *self, GAsyncResult *result, GError **error);
        /* Reopens an earlier task's workspace: resumes a paused VM, starts a shut-off one,
         * makes sure its file server and network daemon run and connects its agent. The
         * folder, mode and network policy are the ones kept in the VM folder. A VM that no
         * longer exists is made again from RECREATE, under the same name, like a start (the
         * task record keeps it, corral-task-record.h); without it, it fails with
         * CORRAL_VM_ERROR_NO_SUCH_VM. */
        void (*resume_async) (CorralLauncher *self,
                              const char *vm_name,
                              const CorralTaskConfig *recreate,
                              CorralLaunchProgressFunc progress,
                              gpointer progress_data,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data);
        CorralLaunchResult *(*resume_finish) (CorralLauncher *self,
                                              GAsyncResult *result,
                                              GError **error);
        /* Removes the task's workspace: its VM and the VM's folder. A workspace that is gone
         * already is not an error. */
        void (*remove_async) (CorralLauncher *self,
                              const char *vm_name,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback,
                              gpointer user_data);
        gboolean (*remove_finish) (CorralLauncher *self, GAsyncResult *result, GError **error);
        /* Optional. A new task with these values is likely soon (the person is choosing its
         * folder): get its workspace ready ahead, so that start takes seconds. */
        void (*prepare) (CorralLauncher *self, const CorralTaskConfig *config);
        /* Optional. The app closes: remove what prepare made and no task took. */
        void (*release_async) (CorralLauncher *self,
                               GAsyncReadyCallback callback,
                               gpointer user_data);
        gboolean (*release_finish) (CorralLauncher *self, GAsyncResult *result, GError **error);
};

/* Starts a new task's workspace (the implementation's start_async) and saves the task's record
 * (corral-task-record.h) before it returns, so that the task can be found and reopened later;
 * a record that cannot be saved is said in the result's record_error, not a failed start. */
void corral_launcher_start_async (CorralLauncher *self,
                                  const CorralTaskConfig *config,
                                  CorralLaunchProgressFunc progress,
                                  gpointer progress_data,
                                  GCancellable *cancellable,
                                  GAsyncReadyCallback callback,
                                  gpointer user_data);
CorralLaunchResult *
corral_launcher_start_finish (CorralLauncher *self, GAsyncResult *result, GError **error);
void corral_launcher_suspend_async (CorralLauncher *self,
                                    const char *vm_name,
                                    GCancellable *cancellable,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data);
gboolean
corral_launcher_suspend_finish (CorralLauncher *self, GAsyncResult *result, GError **error);
void corral_launcher_list_async (CorralLauncher *self,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data);
GPtrArray *corral_launcher_list_finish (CorralLauncher *self, GAsyncResult *result, GError **error);
void corral_launcher_resume_async (CorralLauncher *self,
                                   const char *vm_name,
                                   const CorralTaskConfig *recreate,
                                   CorralLaunchProgressFunc progress,
                                   gpointer progress_data,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data);
/* (transfer full) */
CorralLaunchResult *
corral_launcher_resume_finish (CorralLauncher *self, GAsyncResult *result, GError **error);

/* A task the person made in the app, for the tasks page: its record and its workspace. */
typedef struct {
        char *vm_name;
        char *title; /* what the person calls it: its name, else its folder's name */
        gboolean named; /* title is the person's (their first request or a rename) */
        char *folder;
        FsMode mode;
        gint64 created; /* seconds since the epoch */
        /* the workspace's state in words ("Workspace removed, …" when only the record is left) */
        char *state;
} CorralTaskInfo;

void corral_task_info_free (CorralTaskInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralTaskInfo, corral_task_info_free)

/* (element-type CorralTaskInfo) the tasks with a record, newest first; workspaces made
 * elsewhere (corralctl, the warm pool) are not tasks and are left out. A launcher that cannot
 * list its workspaces still lists the records. */
void corral_launcher_list_tasks_async (CorralLauncher *self,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
GPtrArray *
corral_launcher_list_tasks_finish (CorralLauncher *self, GAsyncResult *result, GError **error);

/* Removes a task: its workspace (VM and VM folder), its conversation and its record. The
 * person's shared folder is never touched. */
void corral_launcher_remove_task_async (CorralLauncher *self,
                                        const char *vm_name,
                                        GCancellable *cancellable,
                                        GAsyncReadyCallback callback,
                                        gpointer user_data);
gboolean
corral_launcher_remove_task_finish (CorralLauncher *self, GAsyncResult *result, GError **error);

/* See the prepare vfunc; a launcher without one does nothing. */
void corral_launcher_prepare (CorralLauncher *self, const CorralTaskConfig *config);
/* See the release_async vfunc; a launcher without one has nothing to release. */
void corral_launcher_release_async (CorralLauncher *self,
                                    GAsyncReadyCallback callback,
                                    gpointer user_data);
gboolean
corral_launcher_release_finish (CorralLauncher *self, GAsyncResult *result, GError **error);

/* The words for a failed start: a title, and one line that says what to do (what to install).
 * (transfer full) both. */
void corral_launch_error_explain (const GError *error, char **ret_title, char **ret_hint);

G_END_DECLS
