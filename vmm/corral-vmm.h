/* corral-vmm.h — the public header of the vmm library.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-client.h"
#include "corral-agent-ops.h"
#include "corral-exec-spec.h"
#include "corral-process.h"
