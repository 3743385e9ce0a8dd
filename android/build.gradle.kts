// The valet Android library: dev.valet's Java classes (bindings/java) and
// libvalet.so + libvalet_jni.so built by the repository's CMake project in
// its library-only mode. Never built here (no SDK or NDK on these machines):
// see README.md for what stands in for it.
plugins {
    id("com.android.library")
}

// nlohmann-json's headers on the build machine: the NDK's toolchain searches
// only its sysroot, so CMake is told where they are (and copies only their
// nlohmann/ directory). The Gradle property valet.nlohmannJsonDir, else the
// first of the usual places that has them (Debian, Homebrew on Apple silicon,
// then on Intel); with none, CMake's error names what to set.
val nlohmannJsonDir: String = providers.gradleProperty("valet.nlohmannJsonDir").orNull
    ?: listOf("/usr/include", "/opt/homebrew/include", "/usr/local/include")
        .firstOrNull { file("$it/nlohmann/json.hpp").exists() }
    ?: "/usr/include"

android {
    namespace = "dev.valet"
    compileSdk = 35
    // r28: clang 19 and libc++ 19, what CI builds the library with
    // (scripts/test-app-library.sh), and 16 KB pages by default.
    ndkVersion = "28.0.13004108"

    defaultConfig {
        minSdk = 26
        consumerProguardFiles("consumer-rules.pro")
        ndk {
            abiFilters += listOf("arm64-v8a", "x86_64")
        }
        externalNativeBuild {
            cmake {
                // 16 KB-page devices (Android 15+) need 16 KB-aligned LOAD segments.
                arguments += listOf("-DVALET_LIBRARY_ONLY=ON", "-DANDROID_SUPPORT_FLEXIBLE_PAGE_SIZES=ON",
                                    "-DVALET_NLOHMANN_JSON_INCLUDE_DIR=$nlohmannJsonDir")
                targets += listOf("valet_shared", "valet_jni")
            }
        }
    }

    externalNativeBuild {
        cmake {
            path = file("../CMakeLists.txt")
            version = "3.25.0+" // the project's cmake_minimum_required, or any newer CMake found
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }

    sourceSets {
        getByName("main") {
            java.srcDir("../bindings/java/src/main/java")
        }
    }
}

dependencies {
    // ValetLifecycleObserver is a DefaultLifecycleObserver, part of the API.
    api("androidx.lifecycle:lifecycle-common:2.8.7")
}
