/* corral-agent-ops.h — typed wrappers for the agent's file, watch, wait and info methods.
 *
 * Results are checked like everything else from the guest: a result of the wrong shape fails
 * the call with CORRAL_AGENT_ERROR_PROTOCOL.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-client.h"

G_BEGIN_DECLS

#define CORRAL_AGENT_DEFAULT_MAX_READ ((gsize) 64 * 1024 * 1024)

typedef enum {
        CORRAL_FILE_TYPE_UNKNOWN,
        CORRAL_FILE_TYPE_FILE,
        CORRAL_FILE_TYPE_DIR,
        CORRAL_FILE_TYPE_SYMLINK,
        CORRAL_FILE_TYPE_FIFO,
        CORRAL_FILE_TYPE_SOCKET,
        CORRAL_FILE_TYPE_CHAR,
        CORRAL_FILE_TYPE_BLOCK,
} CorralFileType;

typedef struct {
        CorralFileType type;
        guint64 size;
        guint32 mode;
        guint32 uid;
        guint32 gid;
        gint64 mtime_ns;
        char *target; /* (nullable) symlink target */
} CorralFileStat;

typedef struct {
        char *name;
        CorralFileType type;
        guint64 size;
} CorralFileEntry;

typedef enum {
        CORRAL_WRITE_REPLACE, /* atomic: readers see the whole old or the whole new content */
        CORRAL_WRITE_APPEND,
} CorralWriteMode;

void corral_file_stat_free (CorralFileStat *stat);
void corral_file_entry_free (CorralFileEntry *entry);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralFileStat, corral_file_stat_free)

/* Reads length bytes (-1: to EOF) from offset. Fails with CORRAL_AGENT_ERROR_TOO_LARGE rather than
 * return more than max_bytes (0: CORRAL_AGENT_DEFAULT_MAX_READ). */
void corral_agent_client_read_file_async (CorralAgentClient *self,
                                          const char *path,
                                          guint64 offset,
                                          gint64 length,
                                          gsize max_bytes,
                                          GCancellable *cancellable,
                                          GAsyncReadyCallback callback,
                                          gpointer user_data);
GBytes *corral_agent_client_read_file_finish (CorralAgentClient *self,
                                              GAsyncResult *result,
                                              GError **error);

/* perm 0 means the agent's default (0644). */
void corral_agent_client_write_file_async (CorralAgentClient *self,
                                           const char *path,
                                           GBytes *contents,
                                           CorralWriteMode mode,
                                           guint perm,
                                           GCancellable *cancellable,
                                           GAsyncReadyCallback callback,
                                           gpointer user_data);
gboolean corral_agent_client_write_file_finish (CorralAgentClient *self,
                                                GAsyncResult *result,
                                                GError **error);

void corral_agent_client_stat_async (CorralAgentClient *self,
                                     const char *path,
                                     gboolean follow,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
CorralFileStat *
corral_agent_client_stat_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

/* Result: (element-type CorralFileEntry) (transfer full). */
void corral_agent_client_list_async (CorralAgentClient *self,
                                     const char *path,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
GPtrArray *corral_agent_client_list_finish (CorralAgentClient *self,
                                            GAsyncResult *result,
                                            gboolean *ret_truncated,
                                            GError **error);

/* perm 0 means the agent's default (0755). */
void corral_agent_client_mkdir_async (CorralAgentClient *self,
                                      const char *path,
                                      gboolean parents,
                                      guint perm,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data);
void corral_agent_client_move_async (CorralAgentClient *self,
                                     const char *from,
                                     const char *to,
                                     gboolean overwrite,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
void corral_agent_client_remove_async (CorralAgentClient *self,
                                       const char *path,
                                       gboolean recursive,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback,
                                       gpointer user_data);
/* Finishes mkdir, move, remove, watch_stop and wait_port. */
gboolean
corral_agent_client_op_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

/* Events arrive as CorralAgentClient::watch-event (guint watch, const char *path,
 * const char *kind); kind is one of create, modify, delete, move-from, move-to, attrib, overflow. */
void corral_agent_client_watch_start_async (CorralAgentClient *self,
                                            const char *path,
                                            gboolean recursive,
                                            GCancellable *cancellable,
                                            GAsyncReadyCallback callback,
                                            gpointer user_data);
/* Returns the watch id, 0 on error. */
guint corral_agent_client_watch_start_finish (CorralAgentClient *self,
                                              GAsyncResult *result,
                                              GError **error);
void corral_agent_client_watch_stop_async (CorralAgentClient *self,
                                           guint watch,
                                           GCancellable *cancellable,
                                           GAsyncReadyCallback callback,
                                           gpointer user_data);

/* Fails with CORRAL_AGENT_ERROR_TIMEOUT when nothing accepts within timeout_ms. */
void corral_agent_client_wait_port_async (CorralAgentClient *self,
                                          const char *host,
                                          guint16 port,
                                          guint timeout_ms,
                                          GCancellable *cancellable,
                                          GAsyncReadyCallback callback,
                                          gpointer user_data);

/* Resolves with the first output line of process proc_id that matches regex (POSIX ERE). */
void corral_agent_client_wait_log_async (CorralAgentClient *self,
                                         guint64 proc_id,
                                         const char *regex,
                                         guint timeout_ms,
                                         GCancellable *cancellable,
                                         GAsyncReadyCallback callback,
                                         gpointer user_data);
char *
corral_agent_client_wait_log_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

/* Asks the VM's init to power off (system.poweroff). The reply may never come: the VM goes
 * down with the connection. */
void corral_agent_client_poweroff_async (CorralAgentClient *self,
                                         GCancellable *cancellable,
                                         GAsyncReadyCallback callback,
                                         gpointer user_data);
gboolean
corral_agent_client_poweroff_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

/* Result: (transfer full) the agent's info object (kernel, hostname, uptime_s, mem_*, disk_*, ...),
 * unvalidated beyond being a JSON object: read it with proto_json_get_*(). */
void corral_agent_client_info_async (CorralAgentClient *self,
                                     GCancellable *cancellable,
                                     GAsyncReadyCallback callback,
                                     gpointer user_data);
cJSON *
corral_agent_client_info_finish (CorralAgentClient *self, GAsyncResult *result, GError **error);

G_END_DECLS
