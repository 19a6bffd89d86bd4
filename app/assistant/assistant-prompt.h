/* assistant-prompt.h — the system prompt: what the sandbox is, in words a model acts on.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-shares.h"
#include "egress-policy.h"

G_BEGIN_DECLS

typedef struct {
        const char *vm_name; /* NULL: a local agent, no sandbox */
        GPtrArray *shares; /* (element-type CorralShare) (nullable) */
        const CorralEgressPolicy *policy; /* (nullable): no policy file = allowlist, no rules */
        const char *const *credential_names; /* (nullable) */
        const char *const *mcp_tools; /* (nullable) exposed names */
        const char *const *undone; /* (nullable) paths in the VM the person put back */
} AssistantPromptInfo;

/* (transfer full) */
char *assistant_prompt_build (const AssistantPromptInfo *info);

/* The changes the person undid in the VM's shared folders (the "undone" lines of the task's
 * change journal, fs-journal.h), as paths in the VM (/workspace/SHARE/PATH), the latest last
 * and at most max of them; an empty array when there are none or the journal cannot be read.
 * (transfer full) (element-type utf8) */
GPtrArray *assistant_prompt_undone (const char *vm_dir, guint max);

/* VM_DIR/egress-policy.json, or the default a VM starts with when there is none; NULL (with a
 * debug message) when the file cannot be read: the prompt then says the policy is unknown. */
CorralEgressPolicy *assistant_prompt_load_policy (const char *vm_dir);

G_END_DECLS
