// valet's log (valet_log_set) delivered to dev.valet.ValetLog, so that the
// app's LogHandler sees the library's warnings; without a handler ValetLog
// hands them back to valet's default log (NativeLib.log).
#pragma once

namespace valet_jni {

// Makes the bridge valet's log sink: once, from JNI_OnLoad, after Init().
void InstallLogBridge();
// Restores valet's default log before this library's code goes away.
void RemoveLogBridge();

}  // namespace valet_jni
