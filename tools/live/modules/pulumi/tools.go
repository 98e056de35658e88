//go:build tools

package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
