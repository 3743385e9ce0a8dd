// The valet Android library: dev.valet's Java classes (bindings/java) and
// libvalet.so + libvalet_jni.so built by the repository's CMake project in
// its library-only mode. Never built here (no SDK or NDK on these machines):
// see README.md for what stands in for it.
plugins {
    id("com.android.library")
}

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
                arguments += listOf("-DVALET_LIBRARY_ONLY=ON", "-DANDROID_SUPPORT_FLEXIBLE_PAGE_SIZES=ON")
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
